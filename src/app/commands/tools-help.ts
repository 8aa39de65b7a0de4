import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

const FLAGS = ['json', 'project'] as const;
const IMPORT_FLAGS = ['name', 'server', 'sign', 'project'] as const;

export const TOOLS_HELP = defineHelp({
  name: 'tools',
  summary: 'the .ai/ registry: list, show, validate and import tools',
  usage: 'kiwi tools list|show TOOL|validate|import openapi FILE|URL|import mcp SERVER [--json] [--name NAME] [--server URL] [--sign] [--project DIR]',
  about: "The tools this project can run: the project tier (.ai/), then the user tier (~/.ai, or KIWI_USER_DIR), then the registry tier in the database.",
  flags: {
    json: { type: 'boolean', help: 'print as JSON' },
    name: { type: 'string', value: 'NAME', help: "import: the API's name, its tools' folder and id prefix (default: from its title)" },
    server: { type: 'string', value: 'URL', help: "import: the API's base URL, instead of the document's first server" },
    sign: { type: 'boolean', help: 'import: sign each manifest written (kiwi verify checks it)' },
    project: PROJECT_FLAG,
  },
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
    {
      name: 'import',
      summary: 'tools from an OpenAPI 3 document or an MCP server',
      usage: 'kiwi tools import openapi FILE|URL [--name NAME] [--server URL] [--sign] | mcp SERVER [--sign] [--project DIR]',
      about:
        "Writes an api manifest for each operation of an OpenAPI 3.0 or 3.1 document (JSON or YAML) under .ai/tools/NAME/: its parameters and JSON body as the tool's parameters, its server as the base URL (${NAME_URL} moves it), its security as headers read from the environment when the tool runs (${NAME_TOKEN}, ${NAME_API_KEY}, ${NAME_BASIC_AUTH}). Each is checked as the registry reads it; importing the same document again changes nothing. What cannot be expressed (a body that is not JSON, a cookie) is named and left out. `import mcp SERVER` writes an mcp_tool manifest for each tool the configured MCP server SERVER lists (those the policy's mcp.tools lets it see) under .ai/tools/SERVER/, with its input schema as the parameters.",
      flags: IMPORT_FLAGS,
      examples: [{ run: 'kiwi tools import openapi petstore.json --name petstore' }, { run: 'kiwi tools import openapi https://example.com/openapi.yaml --server https://api.example.com/v2' }, { run: 'kiwi tools import mcp files' }],
    },
  ],
});
