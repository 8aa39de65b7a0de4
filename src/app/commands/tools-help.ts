import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

const FLAGS = ['json', 'project'] as const;

export const TOOLS_HELP = defineHelp({
  name: 'tools',
  summary: 'the .ai/ registry: list, show and validate the tools',
  usage: 'kiwi tools list|show TOOL|validate [--json] [--project DIR]',
  about: "The tools this project can run: the project tier (.ai/), then the user tier (~/.ai, or KIWI_USER_DIR), then the registry tier in the database.",
  flags: { json: { type: 'boolean', help: 'print as JSON' }, project: PROJECT_FLAG },
  examples: [{ run: 'kiwi tools list' }, { run: 'kiwi tools validate' }],
  subcommands: [
    { name: 'list', summary: 'every valid tool, with its type, executor and tier', usage: 'kiwi tools list [--json] [--project DIR]', flags: FLAGS, examples: [{ run: 'kiwi tools list' }, { run: 'kiwi tools list --json' }] },
    {
      name: 'show',
      summary: "one tool's parameters and where it is defined",
      usage: 'kiwi tools show TOOL [--json] [--project DIR]',
      about: "The tool's type, version, tier, file, executor and parameters; for an MCP server, the tools it offers.",
      flags: FLAGS,
      examples: [{ run: 'kiwi tools show git_log' }],
    },
    {
      name: 'validate',
      summary: 'every problem in .ai/, with what to write instead',
      usage: 'kiwi tools validate [--json] [--project DIR]',
      about: 'Every invalid file (file, field, what to write instead), every broken chain, a tool template {name} that is no parameter and a hook whose directive does not exist. Exit 1 if there is any.',
      flags: FLAGS,
      examples: [{ run: 'kiwi tools validate' }],
    },
  ],
});
