import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const RUNNER_HELP = defineHelp({
  name: 'runner',
  summary: "run a kernel's remote tool calls here, through the tool proxy",
  usage: 'kiwi runner --kernel URL [--key KEY] [--runner-id ID] [--tools GLOB,…] [--concurrency N] [--json] [--project DIR]',
  about:
    "Offers this project's tools to a kernel elsewhere (a gateway that kiwi serve runs) as a runner: the kernel sends its agents' remote calls here, and each runs through this project's tool proxy — its policy, rate limits and audit — as the local client. Only the tools this machine's policy allows are offered; --tools can narrow them. Runs until Ctrl-C or SIGTERM, then unregisters. Exit 1 when the kernel cannot be reached at the start or refuses the runner.",
  flags: {
    kernel: { type: 'string', value: 'URL', help: "the kernel's address, e.g. http://127.0.0.1:8787 (required)" },
    key: { type: 'string', value: 'KEY', help: 'a client key with the runner role for the kernel (default: KIWI_KERNEL_KEY)' },
    'runner-id': { type: 'string', value: 'ID', help: "the runner's name at the kernel: 1 to 200 letters, digits or _ . : @ - (default: HOST-PROJECT)" },
    tools: { type: 'string', value: 'GLOB,…', help: 'offer only the tools that match these ids or globs, comma-separated' },
    concurrency: { type: 'string', value: 'N', help: 'jobs run at once, 1 to 32 (default: 1)' },
    json: { type: 'boolean', help: 'print the ready line, one line per job and the stop line as JSON on stdout' },
    project: PROJECT_FLAG,
  },
  examples: [
    { run: 'kiwi runner --kernel http://10.0.0.5:8787 --key "$RUNNER_KEY"' },
    { run: 'kiwi runner --kernel http://10.0.0.5:8787 --tools "git_*,read_file" --concurrency 4', about: 'only the git tools and read_file, four jobs at once' },
  ],
});
