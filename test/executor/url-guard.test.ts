import { afterEach, describe, expect, it } from 'vitest';
import { authorHost } from '../../src/executor/author-host.js';
import { resolveChain } from '../../src/executor/chain.js';
import { executePlan } from '../../src/executor/execute-plan.js';
import { planCall } from '../../src/executor/plan.js';
import type { HttpPlan } from '../../src/executor/plan-types.js';
import { createMcpClientPool } from '../../src/mcp-client/client-pool.js';
import { createRequirementCheck } from '../../src/primitives/python-requirements.js';
import { createAddressGuard, type AddressGuardOptions } from '../../src/primitives/address-guard.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { createLocalServers } from '../fixtures/http/local-servers.js';
import { failure } from '../helpers/expect-failure.js';
import { makeTool, toolMap } from '../helpers/make-tool.js';

/** http_client tools whose URL an agent's arguments fill: the manifest's own host is trusted, any other checked. */
const servers = createLocalServers();
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await servers.closeAll();
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

const ctx = { root: '/', env: { API_HOST: '127.0.0.1' } };

function api(url: string, parameters: string[]) {
  return makeTool({ id: 'fetcher', type: 'api', executor: 'http_client', config: { url }, parameters: parameters.map((name) => ({ name, type: 'string', required: true })) });
}

function plan(url: string, args: Record<string, string>): HttpPlan {
  const p = planCall(resolveChain(toolMap(api(url, Object.keys(args))), 'fetcher'), args, ctx);
  if (p.kind !== 'http') throw new Error('expected an http plan');
  return p;
}

async function run(url: string, args: Record<string, string>, allowPrivate: string[] = [], resolve?: AddressGuardOptions['resolve']) {
  const guard = createAddressGuard({ allowPrivate, ...(resolve ? { resolve } : {}) });
  const deps = { http: createHttpClient({ addressGuard: guard }), mcp: createMcpClientPool(), requirements: createRequirementCheck() };
  cleanups.push(async () => {
    await Promise.all([deps.http.close(), deps.mcp.close()]);
    await guard.close();
  });
  return executePlan(plan(url, args), deps);
}

const answering = () => servers.serve((req, res) => res.end(JSON.stringify({ path: req.url })));

describe('http_client tools: who chose the host', () => {
  it('a manifest with a literal 127.0.0.1 URL still works; its arguments fill only the path and query', async () => {
    const { port } = await answering();
    const result = await run(`http://127.0.0.1:${port}/v1/{city}?q={q}`, { city: 'a/../b', q: 'x' });
    expect(result.data).toEqual({ path: '/v1/a%2F..%2Fb?q=x' });
  });

  it('a host from the operator\'s environment counts as the author\'s', async () => {
    const { port } = await answering();
    expect((await run(`http://\${API_HOST}:${port}/r/{id}`, { id: '7' })).data).toEqual({ path: '/r/7' });
  });

  it.each(['127.0.0.1', '127.0.0.1.', '2130706433', '0177.0.0.1', '0x7f.0.0.1', '127.1', '0', 'localhost', 'LocalHost'])('an argument-filled host is refused: http://{host}:PORT/ with host %s', async (host) => {
    const { port, seen } = await answering();
    const error = await failure(run(`http://{host}:${port}/x`, { host }), 'POLICY_DENIED');
    expect(error.message).toMatch(new RegExp(`^GET http://[^/]+:${port}/x was refused: .*(loopback|unspecified).* add ".*" \\(or the range ".*"\\) to network\\.allow_private in \\.ai/config/policy\\.yaml$`));
    expect(seen).toEqual([]);
  });

  it('a host that keeps its placeholder braces is still the argument\'s, and checked', async () => {
    const { port, seen } = await answering();
    const resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    const error = await failure(run(`http://{sub}.example.com:${port}/`, { sub: '{sub}' }, [], resolve), 'POLICY_DENIED');
    expect(error.message).toContain('{sub}.example.com resolves to 127.0.0.1, a loopback address');
    expect(seen).toEqual([]);
  });

  it('an argument cannot carry a whole URL, a port or brackets: percent-encoded, they are not a URL', async () => {
    const { port, seen } = await answering();
    await failure(run('{url}', { url: `http://127.0.0.1:${port}/` }), 'INVALID_INPUT');
    await failure(run('http://{host}/', { host: `127.0.0.1:${port}` }), 'INVALID_INPUT');
    await failure(run(`http://{host}:${port}/`, { host: '[::ffff:127.0.0.1]' }), 'INVALID_INPUT');
    expect(seen).toEqual([]);
  });

  it('userinfo tricks and zone ids never reach a server', async () => {
    const { port, seen } = await answering();
    await failure(run(`http://{host}:${port}/`, { host: 'example.com@127.0.0.1' }), 'INVALID_INPUT');
    await failure(run(`http://{host}:${port}/`, { host: 'fe80::1%lo' }), 'INVALID_INPUT');
    // The manifest's own userinfo slot filled by an argument: credentials in URLs are refused outright.
    await failure(run(`http://{user}@127.0.0.1:${port}/`, { user: 'example.com' }), 'INVALID_INPUT');
    // Encoded, an `@` after the host cannot move it.
    await failure(run(`http://127.0.0.1:${port}{path}`, { path: '@169.254.169.254/' }), 'INVALID_INPUT');
    expect(seen).toEqual([]);
  });

  it('a redirect from the manifest\'s host to 127.0.0.1 on another port is refused', async () => {
    const inner = await answering();
    const { port } = await servers.serve((_req, res) => res.writeHead(302, { location: `${inner.url}/admin` }).end());
    const error = await failure(run(`http://127.0.0.1:${port}/go/{id}`, { id: '1' }), 'POLICY_DENIED');
    expect(error.message).toMatch(new RegExp(`${inner.url}/admin was refused \\(redirected from http://127\\.0\\.0\\.1:${port}/go/1\\)`));
    expect(inner.seen).toEqual([]);
  });

  it('network.allow_private lets an argument-filled private host through', async () => {
    const { port } = await answering();
    expect((await run(`http://{host}:${port}/ok`, { host: 'localhost' }, ['localhost'])).data).toEqual({ path: '/ok' });
    expect((await run(`http://{host}:${port}/ok`, { host: '127.0.0.1' }, ['127.0.0.0/8'])).data).toEqual({ path: '/ok' });
  });
});

describe('authorHost', () => {
  const scope = { params: {}, env: { BASE: 'https://api.example.com', HOST: 'api.example.com' }, where: 'test' };
  it.each([
    ['https://api.example.com/v1/{x}', 'https://api.example.com/v1/y', 'api.example.com'],
    ['https://api.example.com:8443/{x}', 'https://api.example.com:8443/y', 'api.example.com:8443'],
    ['${BASE}/v1/{x}', 'https://api.example.com/v1/y', 'api.example.com'],
    ['https://${HOST}/{x}', 'https://api.example.com/y', 'api.example.com'],
    ['{url}', 'https://api.example.com/', undefined],
    ['https://{sub}.example.com/', 'https://%7Bsub%7D.example.com/', undefined],
    ['https://api.example.com{path}', 'https://api.example.com.evil.test/', undefined],
    ['https://api.example.com:{port}/', 'https://api.example.com:22/', undefined],
    ['https://api.example.com/', 'https://api.example.com./', undefined],
  ])('%s filled as %s → %s', (template, filled, expected) => {
    expect(authorHost(template, scope, filled)).toBe(expected);
  });
});
