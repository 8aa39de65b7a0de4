import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

const WHERE = '(.ai/state/keys.json, or with DATABASE_URL that Postgres)';

export const KEYS_HELP = defineHelp({
  name: 'keys',
  summary: 'client API keys (stored hashed); once one exists, all need one',
  usage: 'kiwi keys create NAME [--role ROLE]… [--agent ID]… [--tool ID]… [--policy FILE] | kiwi keys list | kiwi keys revoke KEY_ID|NAME  [--project DIR] [--json]',
  about: `The keys clients send to the gateway, as Authorization: Bearer KEY or x-api-key: KEY, stored hashed ${WHERE}. Once a key exists, every request needs one. A running gateway sees changes within a second.`,
  flags: {
    project: PROJECT_FLAG,
    policy: { type: 'string', value: 'FILE', help: 'a policy file that narrows what this client may do (create)' },
    role: { type: 'string', value: 'ROLE', multiple: true, help: 'client, agent, runner, approver or admin, or a comma-separated list (create; default: client)' },
    agent: { type: 'string', value: 'ID', multiple: true, help: 'an agent id, or a prefix ending in *, that an agent key serves (create, with --role agent)' },
    tool: { type: 'string', value: 'ID', multiple: true, help: 'a tool id, or a prefix ending in *, that a runner key serves (create, with --role runner)' },
    json: { type: 'boolean', help: 'print as JSON' },
  },
  examples: [{ run: 'kiwi keys create ci-bot' }, { run: 'kiwi keys list' }],
  subcommands: [
    {
      name: 'create',
      summary: 'a key for a client, printed once',
      usage: 'kiwi keys create NAME [--role ROLE]… [--agent ID]… [--tool ID]… [--policy FILE] [--json] [--project DIR]',
      about: `Makes a key for the client NAME and prints it once; only its SHA-256 is kept ${WHERE}. Its roles default to client; an agent key names the agents it serves, a runner key the tools.`,
      flags: ['role', 'agent', 'tool', 'policy', 'json', 'project'],
      examples: [
        { run: 'kiwi keys create ci-bot' },
        { run: 'kiwi keys create reviewer --role approver', about: 'a person who answers approvals in the console' },
        { run: 'kiwi keys create build-box --role runner --tool "git_*"', about: 'a remote runner that serves the git tools' },
        { run: 'kiwi keys create intern --policy intern-policy.yaml', about: 'a client the policy file narrows' },
      ],
    },
    {
      name: 'list',
      summary: 'the keys, never their secrets',
      usage: 'kiwi keys list [--json] [--project DIR]',
      about: 'Each key with its id, client, roles, when it was made and whether it was revoked.',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi keys list' }],
    },
    {
      name: 'revoke',
      summary: 'revoke one key, or every key of a client',
      usage: 'kiwi keys revoke KEY_ID|NAME [--json] [--project DIR]',
      about: 'Revokes the key with that id (key_ and 8 hex digits), or every key of the client with that name. A running gateway refuses it within a second.',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi keys revoke key_3f2a9c01' }, { run: 'kiwi keys revoke ci-bot', about: 'every key of the client ci-bot' }],
    },
  ],
});
