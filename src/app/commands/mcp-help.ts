import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const MCP_HELP = defineHelp({
  name: 'mcp',
  summary: "serve the project's tools as an MCP server on stdio",
  usage: 'kiwi mcp [--project DIR] [--tools real|meta] [--tags T,…] [--max N] [--allow-empty]',
  about:
    "An MCP server on stdin and stdout for clients that spawn one (Claude Desktop, editors): the project's tools the policy grants, each under its id with its own schema (the first --max of them; a tool that search or load finds joins the list), and the meta-tools search, load, execute, help and resolve over every item, each call through the tool proxy. stdout carries the protocol only; progress and warnings go to stderr. Ends when the client closes stdin.",
  flags: {
    project: PROJECT_FLAG,
    tools: { type: 'string', value: 'real|meta', help: '"real" (default): the project\'s tools beside the meta-tools; "meta": the five meta-tools only' },
    tags: { type: 'string', value: 'T,…', help: 'list only the tools with one of these tags (a profile), e.g. git,files' },
    max: { type: 'string', value: 'N', help: 'how many tools are listed at first, 1 to 500 (default 40)' },
    'allow-empty': { type: 'boolean', help: 'serve a folder without .ai/ anyway (only your user tools; .ai/ is made there for the index)' },
  },
  examples: [
    { run: 'kiwi mcp --project ~/work/shop', about: 'the command line an MCP client is given' },
    { run: 'kiwi mcp --tags git --max 10', about: 'a profile: the git tools, ten at most' },
    { run: 'kiwi mcp --allow-empty', about: 'only the tools of your user tier (~/.ai)' },
  ],
});
