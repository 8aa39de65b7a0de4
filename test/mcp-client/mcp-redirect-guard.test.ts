import { afterEach, describe, expect, it } from 'vitest';
import { createMcpClientPool, type McpServerSpec } from '../../src/mcp-client/client-pool.js';
import { KiwiError } from '../../src/base/errors.js';
import { createAddressGuard } from '../../src/primitives/address-guard.js';
import { createGuardedFetch } from '../../src/primitives/guarded-fetch.js';
import { startHttpMcpFixture } from '../fixtures/mcp/http-server.js';
import { createLocalServers } from '../fixtures/http/local-servers.js';
import { failure } from '../helpers/expect-failure.js';

/** An MCP server's URL is the author's and is reached as written; where it redirects to is checked like an agent's host. */
const servers = createLocalServers();
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await servers.closeAll();
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function setUp() {
  const mcp = await startHttpMcpFixture();
  // A front door on another port that sends every request on to the real server (307 keeps the POST and its body).
  const front = await servers.serve((_req, res) => res.writeHead(307, { location: mcp.url }).end());
  const pool = createMcpClientPool({ connectTimeoutMs: 10_000 });
  cleanups.push(async () => {
    await pool.close();
    await mcp.close();
  });
  return { pool, mcp, front };
}

describe('MCP over HTTP: the server URL is the author\'s', () => {
  it('reaches the server at the URL as written, even on 127.0.0.1', async () => {
    const { pool, mcp } = await setUp();
    const spec: McpServerSpec = { name: 'direct', transport: 'http', url: mcp.url };
    expect((await pool.callTool(spec, 'echo', { text: 'hi' })).text).toContain('hi');
  });

  it('does not follow a redirect from the server\'s URL to another origin', async () => {
    const { pool, mcp, front } = await setUp();
    const spec: McpServerSpec = { name: 'redirected', transport: 'http', url: `${front.url}/mcp` };
    const error = await failure(pool.callTool(spec, 'echo', { text: 'hi' }), 'MCP_ERROR');
    expect(String((error.cause as Error | undefined)?.message)).toContain(`Redirect to ${mcp.url} not followed`);
    expect(mcp.sessionsStarted()).toBe(0);
  });
});

describe('the guarded fetch under the MCP transports', () => {
  async function fetchThrough(allowPrivate: string[]) {
    const target = await servers.serve((req, res) => res.end(`reached ${req.url}`));
    const front = await servers.serve((_req, res) => res.writeHead(302, { location: `${target.url}/inner` }).end());
    const guard = createAddressGuard({ allowPrivate });
    cleanups.push(() => guard.close());
    const guarded = createGuardedFetch(guard, new URL(front.url).host);
    return { response: guarded(`${front.url}/outer`), target };
  }

  it('reaches the author host as written and refuses a redirect to 127.0.0.1 on another port', async () => {
    const { response, target } = await fetchThrough([]);
    const error = await response.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    const cause = (error as TypeError).cause;
    expect(cause).toBeInstanceOf(KiwiError);
    expect((cause as KiwiError).code).toBe('POLICY_DENIED');
    expect((cause as KiwiError).message).toContain('127.0.0.1 is a loopback address (127.0.0.0/8)');
    expect(target.seen).toEqual([]);
  });

  it('follows it when network.allow_private allows the address', async () => {
    const { response } = await fetchThrough(['127.0.0.1']);
    expect(await (await response).text()).toBe('reached /inner');
  });
});
