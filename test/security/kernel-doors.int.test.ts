import { request } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { serveGateway, type ServedGateway } from '../helpers/serve-gateway.js';
import { createTempProject } from '../helpers/temp-project.js';

/**
 * The kernel's routes of this session on the gateway `kiwi serve` runs, with a client key made:
 * what an attacker sends — a foreign Host (DNS rebinding), a web page's Origin, no key or a
 * wrong one, a body too big — fails closed on the execution routes, the runners' tool schemas,
 * /v0/tools and /metrics alike, before the kernel reads anything.
 */

const project = createTempProject();
let served: ServedGateway;
let key: string;

beforeAll(async () => {
  ({ key } = await createKey(path.join(project.root, KEY_FILE), 'ops', { roles: ['client', 'runner'], tools: ['*'] }));
  served = await serveGateway(project.root);
}, 120_000);

afterAll(async () => {
  await served?.close();
  project.remove();
});

/** A raw request, so the Host header is the attacker's to set. */
function send(method: string, target: string, headers: Record<string, string>, body?: string | Buffer): Promise<{ status: number; text: string }> {
  const url = new URL(served.server.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path: target, headers: { host: `127.0.0.1:${url.port}`, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    // The server may answer and close before a big body is all sent.
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    req.end(body);
  });
}

const ROUTES: [method: string, target: string][] = [
  ['GET', '/v0/executions'],
  ['POST', '/v0/executions/00000000-0000-7000-8000-000000000000/cancel'],
  // The approval answer of a chat's call (step.approve): no web page or keyless caller may send it.
  ['POST', '/v0/executions/00000000-0000-7000-8000-000000000000/signal'],
  ['POST', '/v0/runners/r1/tools'],
  ['DELETE', '/v0/runners/r1'],
  ['GET', '/v0/tools'],
  ['GET', '/v0/runners/stream?runner_id=r1&consumer_id=c1'],
  ['GET', '/metrics'],
];

describe("the kernel's doors on a served gateway with client keys", () => {
  it('refuses a foreign Host on every route, key or not', async () => {
    for (const [method, target] of ROUTES) {
      const res = await send(method, target, { host: 'evil.example', authorization: `Bearer ${key}` });
      expect(res.status, `${method} ${target}`).toBe(403);
    }
  });

  it("refuses a web page's Origin on every route, key or not", async () => {
    for (const [method, target] of ROUTES) {
      const res = await send(method, target, { origin: 'https://evil.example', authorization: `Bearer ${key}` });
      expect(res.status, `${method} ${target}`).toBe(403);
    }
  });

  it('refuses no key and a wrong key with 401 on every route', async () => {
    for (const [method, target] of ROUTES) {
      for (const auth of [{}, { authorization: 'Bearer kiwi_not-a-key' }, { authorization: `Basic ${key}` }] as Record<string, string>[]) {
        const res = await send(method, target, { accept: 'text/plain', ...auth });
        expect(res.status, `${method} ${target} ${JSON.stringify(auth)}`).toBe(401);
      }
    }
  });

  it('refuses a tool-schema body over the 1 MiB cap with the spec error, and the runner publishes nothing', async () => {
    const huge = JSON.stringify({ tools: [{ id: 't', description: 'x'.repeat(2 * 1024 * 1024) }] });
    const res = await send('POST', '/v0/runners/r1/tools', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, huge);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ code: 'VALIDATION_ERROR' });
    const listed = await send('GET', '/v0/tools', { authorization: `Bearer ${key}` });
    expect(JSON.parse(listed.text)).toEqual([]);
  });

  it('refuses an approval signal body over the 1 MiB cap before the kernel reads it', async () => {
    const huge = JSON.stringify({ signal_type: 'step.approve', payload: { step_id: 's', approved: true, decided_by: 'x'.repeat(2 * 1024 * 1024) } });
    const res = await send('POST', '/v0/executions/00000000-0000-7000-8000-000000000000/signal', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, huge);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('leaves only /v0/health and /v0/ready open', async () => {
    expect((await send('GET', '/v0/health', {})).status).toBe(200);
    expect((await send('GET', '/v0/ready', {})).status).toBe(200);
  });
});
