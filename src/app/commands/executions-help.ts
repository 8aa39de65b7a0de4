import { defineHelp, KEY_FLAG, URL_FLAG } from '../../cli/command-help.js';

const GATEWAY = ['url', 'key', 'json'] as const;
/** An execution id as `kiwi executions list` prints it. */
const ID = '0195f3c2-6a10-7c3e-8b21-4d5e6f708192';

export const EXECUTIONS_HELP = defineHelp({
  name: 'executions',
  summary: "the kernel's executions on a running gateway (v0 API)",
  usage: 'kiwi executions list [--status S] [--agent A] [--label k:v]… [--limit N] | show ID | events ID [--after N] | cancel ID   [--url URL] [--key KEY] [--json]',
  about: "The kernel's executions — agent runs, threads, the gateway's chats — read and cancelled through a running gateway's /v0 API.",
  flags: {
    status: { type: 'string', value: 'S', help: 'only executions in this status, e.g. running, blocked, completed (list)' },
    agent: { type: 'string', value: 'A', help: 'only the executions of this agent id (list)' },
    label: { type: 'string', value: 'k:v', multiple: true, help: 'only executions with this label (list)' },
    limit: { type: 'string', value: 'N', help: 'how many, at most 200 (list; default: 50)' },
    after: { type: 'string', value: 'N', help: 'only the events after this sequence number (events)' },
    url: URL_FLAG,
    key: KEY_FLAG,
    json: { type: 'boolean', help: 'print as JSON' },
  },
  examples: [{ run: 'kiwi executions list --status blocked' }, { run: `kiwi executions events ${ID} --after 10` }],
  subcommands: [
    {
      name: 'list',
      summary: 'the executions, newest first, filtered',
      usage: 'kiwi executions list [--status S] [--agent A] [--label k:v]… [--limit N] [--url URL] [--key KEY] [--json]',
      flags: ['status', 'agent', 'label', 'limit', ...GATEWAY],
      examples: [{ run: 'kiwi executions list --status running' }, { run: 'kiwi executions list --label thread:0195f3c1-0d2e-7f4a-9b3c-5e6f7a8b9c0d --json' }],
    },
    {
      name: 'show',
      summary: 'one execution, with what it used',
      usage: 'kiwi executions show ID [--url URL] [--key KEY] [--json]',
      flags: GATEWAY,
      examples: [{ run: `kiwi executions show ${ID}` }],
    },
    {
      name: 'events',
      summary: "one execution's event log",
      usage: 'kiwi executions events ID [--after N] [--url URL] [--key KEY] [--json]',
      flags: ['after', ...GATEWAY],
      examples: [{ run: `kiwi executions events ${ID}` }, { run: `kiwi executions events ${ID} --after 40 --json` }],
    },
    {
      name: 'cancel',
      summary: 'cancel one execution',
      usage: 'kiwi executions cancel ID [--url URL] [--key KEY] [--json]',
      flags: GATEWAY,
      examples: [{ run: `kiwi executions cancel ${ID}` }],
    },
  ],
});
