import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const AUDIT_HELP = defineHelp({
  name: 'audit',
  summary: 'the latest audited tool calls, allowed and denied',
  usage: 'kiwi audit tail [-n N] [--session ID] [--json] [--project DIR]',
  about: "The audit log: one record per tool call, allowed or denied, with its caller, arguments, outcome and timings. It is read from the project's .ai/logs/audit/, or with DATABASE_URL from the log every gateway on that Postgres writes.",
  flags: {
    n: { type: 'string', short: 'n', value: 'N', default: '20', help: 'how many records, 1 to 10000' },
    session: { type: 'string', value: 'ID', help: 'only the records of this session' },
    json: { type: 'boolean', help: 'one JSON record per line' },
    project: PROJECT_FLAG,
  },
  examples: [{ run: 'kiwi audit tail -n 5' }],
  subcommands: [
    {
      name: 'tail',
      summary: 'the last records, oldest first',
      usage: 'kiwi audit tail [-n N] [--session ID] [--json] [--project DIR]',
      flags: ['n', 'session', 'json', 'project'],
      examples: [{ run: 'kiwi audit tail -n 5' }, { run: 'kiwi audit tail --session cli-20261207T100000-ab12cd --json', about: 'one session, as JSON lines' }],
    },
  ],
});
