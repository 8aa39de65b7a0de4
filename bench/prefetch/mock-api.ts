import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson } from '../../src/base/canonical-json.js';

/**
 * A stand-in for the APIs behind a catalog's tools: `POST /tools/<id>` answers after `delayMs`
 * with the call it got (tool and arguments), so the same call always gets the same answer and
 * a different call a different one. 127.0.0.1 only.
 */
export interface MockApi {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Requests answered, per tool id. */
  readonly calls: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;

export async function startMockApi(options: { delayMs: number }): Promise<MockApi> {
  const calls = new Map<string, number>();
  const server = createServer((req, res) => void answer(req, res));

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = /^\/tools\/([A-Za-z0-9_.-]+)$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !match) return send(res, 404, { error: 'POST /tools/<tool id>' });
    const tool = match[1] as string;
    let body: string;
    try {
      body = await readBody(req);
    } catch (error) {
      return send(res, 413, { error: error instanceof Error ? error.message : String(error) });
    }
    let args: unknown = {};
    try {
      args = body ? JSON.parse(body) : {};
    } catch {
      return send(res, 400, { error: 'the body must be JSON' });
    }
    // The wait stops when the caller goes away (a cancelled speculative call).
    const closed = new Promise<void>((resolve) => res.once('close', resolve));
    await Promise.race([new Promise((resolve) => setTimeout(resolve, options.delayMs)), closed]);
    if (res.writableEnded || res.destroyed) return;
    calls.set(tool, (calls.get(tool) ?? 0) + 1);
    send(res, 200, { tool, arguments: JSON.parse(canonicalJson(args)) as unknown, result: `mock result of ${tool}` });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`the body is over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      parts.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}
