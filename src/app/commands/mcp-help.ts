import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const MCP_HELP = defineHelp({
  name: 'mcp',
  summary: 'serve the meta-tools as an MCP server on stdio',
  usage: 'kiwi mcp [--project DIR] [--allow-empty]',
  about:
    "An MCP server on stdin and stdout for clients that spawn one (Claude Desktop, editors): the meta-tools search, load, execute, help and resolve over this project's tools, each call through the tool proxy. stdout carries the protocol only; progress and warnings go to stderr. Ends when the client closes stdin.",
  flags: {
    project: PROJECT_FLAG,
    'allow-empty': { type: 'boolean', help: 'serve a folder without .ai/ anyway (only your user tools; .ai/ is made there for the index)' },
  },
  examples: [
    { run: 'kiwi mcp --project ~/work/shop', about: 'the command line an MCP client is given' },
    { run: 'kiwi mcp --allow-empty', about: 'only the tools of your user tier (~/.ai)' },
  ],
});
