import { defineHelp, KEY_FLAG, URL_FLAG } from '../../cli/command-help.js';

const GATEWAY = ['url', 'key'] as const;
/** A step id as `kiwi approvals list` prints it. */
const STEP = '0195f3c2-7d41-7b8e-9a5e-3f1c2d4b5a60';

export const APPROVALS_HELP = defineHelp({
  name: 'approvals',
  summary: 'tool calls that wait for a person, and the answer',
  usage: 'kiwi approvals list | grant STEP_ID | deny STEP_ID [--reason TEXT]   [--as NAME] [--url URL] [--key KEY] [--json]',
  about:
    "Calls the policy or a hook holds for approval, from agents and from the gateway's own chats, on a running gateway. An answer is the step.approve signal to the call's execution (the v0 API); a grant names the call it was given for, so a different call under the same step does not run.",
  flags: {
    reason: { type: 'string', value: 'TEXT', help: 'why the call is denied, for the agent and the audit (deny)' },
    as: { type: 'string', value: 'NAME', help: 'who answers, as the audit shows it (default: USER, else the login name)' },
    url: URL_FLAG,
    key: KEY_FLAG,
    json: { type: 'boolean', help: 'print the waiting calls as JSON (list)' },
  },
  examples: [{ run: 'kiwi approvals list' }, { run: `kiwi approvals deny ${STEP} --reason "not on a Friday"` }],
  subcommands: [
    {
      name: 'list',
      summary: 'the calls that wait, with their tool and arguments',
      usage: 'kiwi approvals list [--url URL] [--key KEY] [--json]',
      about: 'Each waiting call: its step id, tool and arguments, the agent and execution, and since when it waits.',
      flags: [...GATEWAY, 'json'],
      examples: [{ run: 'kiwi approvals list' }],
    },
    {
      name: 'grant',
      summary: 'let a waiting call run',
      usage: 'kiwi approvals grant STEP_ID [--as NAME] [--url URL] [--key KEY]',
      flags: ['as', ...GATEWAY],
      examples: [{ run: `kiwi approvals grant ${STEP}` }],
    },
    {
      name: 'deny',
      summary: 'refuse a waiting call, with a reason',
      usage: 'kiwi approvals deny STEP_ID [--reason TEXT] [--as NAME] [--url URL] [--key KEY]',
      flags: ['reason', 'as', ...GATEWAY],
      examples: [{ run: `kiwi approvals deny ${STEP} --reason "use the staging database"` }],
    },
  ],
});
