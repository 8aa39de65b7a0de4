import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const DIRECTIVES_HELP = defineHelp({
  name: 'directives',
  summary: 'run a directive as a thread here, list them, anneal one',
  usage: 'kiwi directives run NAME [--input KEY=VALUE]... [--model M] [--json]  |  list [--json]  |  anneal NAME [--thread ID] [--model M] [--json]   [--project DIR]',
  about: 'Directives are the Markdown files of .ai/directives/: instructions for an agent, with their inputs, the tools they may use, their limits and their model tier.',
  flags: {
    input: { type: 'string', value: 'KEY=VALUE', multiple: true, help: "one of the directive's inputs (run)" },
    model: { type: 'string', value: 'M', help: "the model to use instead of the one the directive's tier maps to (run, anneal)" },
    thread: { type: 'string', value: 'ID', help: 'learn from this failed thread only (anneal; default: its recent failed threads)' },
    json: { type: 'boolean', help: 'print the outcome (run, anneal) or the list as JSON' },
    project: PROJECT_FLAG,
  },
  examples: [{ run: 'kiwi directives run review_changes --input focus=src/auth' }, { run: 'kiwi directives list' }],
  subcommands: [
    {
      name: 'run',
      summary: 'run a directive as a thread, here, printing each step',
      usage: 'kiwi directives run NAME [--input KEY=VALUE]... [--model M] [--json] [--project DIR]',
      about:
        "Runs the gateway's agent loop here (no server needed) with the directive as its instructions: only its tools (within the policy), its limits and hooks, on the model its tier maps to (model_tiers in .ai/config/gateway.yaml; the offline demo model when no upstream is set up). Each step is printed as it happens and the transcript kept in .ai/threads/. Exit 0 completed, 1 failed or cancelled.",
      flags: ['input', 'model', 'json', 'project'],
      examples: [{ run: 'kiwi directives run review_changes' }, { run: 'kiwi directives run review_changes --input focus=src/auth --model gpt-4o-mini' }],
    },
    {
      name: 'list',
      summary: 'every directive: the version that runs, the older ones',
      usage: 'kiwi directives list [--json] [--project DIR]',
      about: 'Every directive with the version that runs and its older versions beside it (an annealed directive beside the one it improved), their files and whether they are signed.',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi directives list' }],
    },
    {
      name: 'anneal',
      summary: 'a better version, written by the model from failed threads',
      usage: 'kiwi directives anneal NAME [--thread ID] [--model M] [--json] [--project DIR]',
      about:
        "Asks the model the directive's tier maps to (through the upstreams of .ai/config/gateway.yaml) for a version that avoids its recent failures, and writes it, signed, beside the old file, which is left as it is. Prints what changed and where it went. Exit 0 written, 1 refused.",
      flags: ['thread', 'model', 'json', 'project'],
      examples: [{ run: 'kiwi directives anneal review_changes' }, { run: 'kiwi directives anneal review_changes --thread 0195f3c1-0d2e-7f4a-9b3c-5e6f7a8b9c0d', about: 'from one failed thread' }],
    },
  ],
});
