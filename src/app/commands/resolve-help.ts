import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const RESOLVE_HELP = defineHelp({
  name: 'resolve',
  summary: 'the call an intent resolves to, with candidates and timings',
  usage: 'kiwi resolve "INTENT" [--context TEXT] [--limit N] [--json] [--project DIR]',
  about:
    'Resolves an intent as the gateway resolves a [TOOL: …] line, and prints the call it comes to (or why it asks back), the candidates with their scores and where the time went; for an intent written as ordered steps, the same for each step. Runs nothing. Exit 0 resolved, 4 unresolved or refused.',
  flags: {
    context: { type: 'string', value: 'TEXT', help: 'the conversation around the intent, as the gateway would pass it' },
    limit: { type: 'string', value: 'N', default: '5', help: 'candidates to show, 1 to 100' },
    json: { type: 'boolean', help: 'print the resolution as JSON' },
    project: PROJECT_FLAG,
  },
  examples: [
    { run: 'kiwi resolve "show me the last 5 commits"' },
    { run: `kiwi resolve 'git_log {"count": 5}'`, about: 'an exact call runs as written' },
    { run: 'kiwi resolve "read the readme" --limit 10 --json' },
  ],
});
