import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const DEMO_HELP = defineHelp({
  name: 'demo',
  summary: 'a guided tour of the tool proxy on the demo .ai/ (no server)',
  usage: 'kiwi demo [--online] [--project DIR]',
  about:
    "Runs a few of the demo project's tools through the permissioned tool proxy — a subprocess, a Node and a Python script, a container, an MCP server, and three calls the policy denies — then prints the audit trail they left. Meant for this repository's own .ai/.",
  flags: {
    online: { type: 'boolean', help: 'add an HTTP API tool that asks the npm registry' },
    project: PROJECT_FLAG,
  },
  examples: [{ run: 'kiwi demo' }, { run: 'kiwi demo --online', about: 'with the HTTP API tool (needs the network)' }],
});
