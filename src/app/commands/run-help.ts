import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const RUN_HELP = defineHelp({
  name: 'run',
  summary: 'run one tool through the permissioned tool proxy',
  usage: 'kiwi run TOOL [--args JSON] [--directive NAME] [--json] [--project DIR]',
  about:
    "Calls one tool of the project as the local client, through the same proxy the gateway uses: the policy, rate limits, hooks, checkpoints and the audit log all apply. A tool of an MCP server is named server.tool. Prints the tool's output; exit 0 when it ran, 1 when it failed or reported an error, 3 when the policy denied it.",
  flags: {
    args: { type: 'string', value: 'JSON', help: "the tool's arguments, a JSON object (default: {})" },
    directive: { type: 'string', value: 'NAME', help: "run under this directive's <permissions>: they narrow the policy, never widen it" },
    json: { type: 'boolean', help: 'print the whole outcome (status, result, timings) as JSON' },
    project: PROJECT_FLAG,
  },
  examples: [
    { run: `kiwi run read_file --args '{"path": "package.json", "max_bytes": 200}'` },
    { run: `kiwi run files.directory_tree --args '{"path": "src"}'`, about: 'a tool of an MCP server, as server.tool' },
    { run: 'kiwi run git_status --directive review_changes --json', about: "under a directive's permissions, the outcome as JSON" },
  ],
});
