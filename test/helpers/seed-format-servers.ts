import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';

export interface LocalServer {
  url: string;
  /** Every request seen: method, path with query, headers and body. */
  requests: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }>;
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that answers every request with `answer` as JSON and records it. */
export async function startJsonServer(answer: unknown): Promise<LocalServer> {
  const requests: LocalServer['requests'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  return listen(server, requests);
}

/** An MCP server over the older HTTP+SSE transport (GET /mcp/sse, POST /mcp/messages) with tools `echo` and `big` (that many bytes of text). */
export async function startSseMcpServer(): Promise<LocalServer> {
  const requests: LocalServer['requests'] = [];
  const transports = new Map<string, SSEServerTransport>();
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '' });
    void route(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  async function route(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/mcp/sse') {
      const transport = new SSEServerTransport('/mcp/messages', res);
      transports.set(transport.sessionId, transport);
      const mcp = new McpServer({ name: 'sse-standin', version: '1.0.0' });
      mcp.registerTool('echo', { description: 'Echo the text back', inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
      mcp.registerTool('big', { description: 'Return this many bytes', inputSchema: { bytes: z.number() } }, ({ bytes }) => ({ content: [{ type: 'text', text: 'x'.repeat(bytes) }] }));
      await mcp.connect(transport);
      return;
    }
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (req.method === 'POST' && transport !== undefined) return transport.handlePostMessage(req, res);
    res.writeHead(404).end();
  }
  return listen(server, requests);
}

async function listen(server: Server, requests: LocalServer['requests']): Promise<LocalServer> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
