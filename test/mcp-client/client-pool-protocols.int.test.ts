import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpClientPool, type McpClientPool, type McpClientPoolOptions, type McpServerSpec } from '../../src/mcp-client/client-pool.js';
import { createLocalServers } from '../fixtures/http/local-servers.js';
import { startModernHttpFixture, type ModernHttpFixture } from '../fixtures/mcp/modern-http-server.js';
import { failure } from '../helpers/expect-failure.js';

/**
 * Which MCP protocol the pool speaks: 2026-07-28 to servers that answer `server/discover` (the SDK
 * 2.x's, over HTTP and stdio), the 2025 handshake to the others, and a clear error for servers
 * that answer nonsense or a revision nobody speaks.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const FLAKY = path.join(ROOT, 'test/fixtures/mcp/flaky-server.mjs');
const MODERN_STDIO = path.join(ROOT, 'test/fixtures/mcp/modern-stdio-server.ts');

const flaky = (...flags: string[]): McpServerSpec => ({ name: 'flaky', transport: 'stdio', command: process.execPath, args: [FLAKY, ...flags] });

const servers = createLocalServers();
let pools: McpClientPool[] = [];
let modern: ModernHttpFixture[] = [];

function makePool(options?: McpClientPoolOptions): McpClientPool {
  const pool = createMcpClientPool(options);
  pools.push(pool);
  return pool;
}

async function modernHttp(): Promise<ModernHttpFixture> {
  const started = await startModernHttpFixture();
  modern.push(started);
  return started;
}

afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
  await Promise.all(modern.map((fixture) => fixture.close()));
  await servers.closeAll();
  pools = [];
  modern = [];
});

describe('2026-07-28', () => {
  it('is spoken to a server on the SDK 2.x over HTTP, every request naming it, with no session', async () => {
    const server = await modernHttp();
    const pool = makePool();
    const spec: McpServerSpec = { name: 'modern', transport: 'http', url: server.url };
    expect((await pool.listTools(spec)).map((tool) => tool.name)).toEqual(['echo', 'era', 'big']);
    expect((await pool.callTool(spec, 'era', {})).text).toBe('modern');
    expect((await pool.callTool(spec, 'echo', { text: 'new protocol' })).text).toBe('new protocol');
    expect(pool.stats().protocols).toEqual({ modern: '2026-07-28' });
    expect(new Set(server.versionsSeen())).toEqual(new Set(['2026-07-28']));
  });

  it('is spoken to a server on the SDK 2.x over stdio, probed on the one child the pool runs', async () => {
    const pool = makePool();
    const spec: McpServerSpec = { name: 'modern', transport: 'stdio', command: process.execPath, args: ['--import', 'tsx', MODERN_STDIO], cwd: ROOT };
    expect((await pool.callTool(spec, 'era', {})).text).toBe('modern');
    expect(pool.stats()).toMatchObject({ spawned: 1, protocols: { modern: '2026-07-28' } });
  });

  it('caps an answer over maxMessageBytes and keeps serving', async () => {
    const server = await modernHttp();
    const pool = makePool({ maxMessageBytes: 64 * 1024 });
    const spec: McpServerSpec = { name: 'modern', transport: 'http', url: server.url };
    const error = await failure(pool.callTool(spec, 'big', { bytes: 200_000 }), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('larger than 65536 bytes');
    expect((await pool.callTool(spec, 'echo', { text: 'after' })).text).toBe('after');
  });
});

describe('2025 servers', () => {
  it('get the 2025 handshake, at the older revision a server answers', async () => {
    const pool = makePool();
    expect((await pool.callTool(flaky('--version=2025-06-18'), 'echo', { text: 'old' })).text).toBe('old');
    expect(pool.stats()).toMatchObject({ spawned: 1, protocols: { flaky: '2025-06-18' } });
  });

  it('get it on a fresh child when they exit on the server/discover probe', async () => {
    const pool = makePool();
    expect((await pool.callTool(flaky('--exit-on-probe'), 'echo', { text: 'strict' })).text).toBe('strict');
    const { spawned, pids, protocols } = pool.stats();
    expect({ spawned, running: pids.length, protocols }).toEqual({ spawned: 2, running: 1, protocols: { flaky: '2025-11-25' } });
    // Started again (it was closed), it is not probed again: one more child, not two.
    await pool.closeServer('flaky');
    expect((await pool.callTool(flaky('--exit-on-probe'), 'echo', { text: 'again' })).text).toBe('again');
    expect(pool.stats()).toMatchObject({ spawned: 3, protocols: { flaky: '2025-11-25' } });
  });

  it('get it when server/discover offers no revision the gateway speaks', async () => {
    const pool = makePool();
    expect((await pool.callTool(flaky('--discover=2099-01-01'), 'echo', { text: 'future' })).text).toBe('future');
    expect(pool.stats().protocols).toEqual({ flaky: '2025-11-25' });
  });
});

describe('servers that answer nonsense', () => {
  it('refuses a handshake answered with a protocol version nobody speaks, and reaps the child', async () => {
    const pool = makePool();
    const error = await failure(pool.callTool(flaky('--version=1999-01-01'), 'echo', { text: 'x' }), 'MCP_ERROR');
    expect(error.message).toContain('answered the MCP handshake with protocol version "1999-01-01", which the gateway does not speak');
    expect(error.message).toContain('2026-07-28, 2025-11-25, 2025-06-18');
    expect(pool.stats()).toMatchObject({ connections: 0, pids: [] });
  });

  it('names what a stdio server wrote that is not JSON-RPC when its handshake times out', async () => {
    const pool = makePool({ connectTimeoutMs: 600 });
    const error = await failure(pool.listTools(flaky('--garbage')), 'MCP_TIMEOUT');
    expect(error.message).toContain('did not finish the MCP handshake within 600 ms');
    expect(error.message).toContain('It sent JSON that is not a JSON-RPC 2.0 message, which the gateway ignored');
    expect(pool.stats()).toMatchObject({ connections: 0, pids: [] });
  });

  it('reports an HTTP server that answers with a web page', async () => {
    const page = await servers.serve((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>welcome</html>'));
    const pool = makePool({ connectTimeoutMs: 2000 });
    const error = await failure(pool.listTools({ name: 'web', transport: 'http', url: page.url }), 'MCP_ERROR');
    expect(error.message).toMatch(/^Could not connect to MCP server "web" \(http:[^)]+\): .*unusable reply \(Unexpected content type: text\/html\)\. Check the URL/);
  });

  it('reports an HTTP server that fails, without reading its error page', async () => {
    const page = await servers.serve((_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('e'.repeat(200_000)));
    const pool = makePool();
    const error = await failure(pool.listTools({ name: 'web', transport: 'http', url: page.url }), 'MCP_ERROR');
    expect(error.message).toContain('answered the probe with HTTP 500');
  });
});
