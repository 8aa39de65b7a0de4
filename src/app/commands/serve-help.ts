import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const SERVE_HELP = defineHelp({
  name: 'serve',
  summary: 'the gateway: OpenAI/Anthropic-compatible proxy, /mcp, /v0, /ui',
  usage: 'kiwi serve [--host HOST] [--port PORT] [--project DIR]',
  about:
    "Serves the project on HTTP until Ctrl-C or SIGTERM (what `npm start` runs): /v1/chat/completions, /v1/messages and /v1/responses for OpenAI and Anthropic clients, running the [TOOL: …] intents their models write; /mcp for MCP clients; /v0, the kernel's API; /ui, the console. Prints where it listens and how it is set up. On Ctrl-C, requests in flight get 10 s to finish. Without client keys (kiwi keys create) it refuses to listen on anything but loopback.",
  flags: {
    host: { type: 'string', value: 'HOST', help: 'the address to listen on (default: KIWI_HOST, else host in .ai/config/gateway.yaml, else 127.0.0.1)' },
    port: { type: 'string', value: 'PORT', help: 'the port, 0 to 65535; 0 picks a free one (default: KIWI_PORT, else port in gateway.yaml, else 8787)' },
    project: PROJECT_FLAG,
  },
  examples: [
    { run: 'kiwi serve' },
    { run: 'kiwi serve --port 9000 --project ~/work/shop', about: 'another port, another project' },
    { run: 'kiwi serve --host 0.0.0.0', about: 'on every interface (needs client keys first)' },
  ],
});
