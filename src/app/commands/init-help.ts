import { defineHelp } from '../../cli/command-help.js';

export const INIT_HELP = defineHelp({
  name: 'init',
  summary: 'make a working .ai/ here (or in DIR); never overwrites',
  usage: 'kiwi init [DIR]   (DIR defaults to the current folder)',
  about:
    'Writes what a project needs to serve its first tool: .ai/config/gateway.yaml (commented defaults), a default-deny .ai/config/policy.yaml, the Python, Node and Bash script runtimes, and a .gitignore for generated state. A file that is already there is kept as it is. Prints what it made and the next steps: write a tool, allow it in the policy, run it, serve it.',
  flags: {},
  examples: [
    { run: 'kiwi init', about: 'make this folder a Kiwi project' },
    { run: 'kiwi init ~/work/shop', about: 'make another folder one' },
  ],
});
