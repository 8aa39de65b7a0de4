import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { readBody } from './read-body.js';

/**
 * The floor any Node gateway pays on this machine: a bare node:http proxy that forwards the
 * chat request to the upstream over undici and copies the response bytes back, parsing and
 * re-encoding nothing. It runs in the gateway's process; what the gateway adds beyond what this
 * adds is the gateway's own work.
 */


export interface ReferenceProxy {
  url: string;
  close(): Promise<void>;
}

export async function startReferenceProxy(upstreamOrigin: string): Promise<ReferenceProxy> {
  const agent = new Agent({ connections: 256, keepAliveTimeout: 120_000, keepAliveMaxTimeout: 120_000 });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const up = await request(`${upstreamOrigin}${req.url ?? '/'}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, dispatcher: agent });
    res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/octet-stream') });
    for await (const chunk of up.body as AsyncIterable<Buffer>) res.write(chunk);
    res.end();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `reference proxy: ${error instanceof Error ? error.message : String(error)}` } }));
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await agent.close();
    },
  };
}
