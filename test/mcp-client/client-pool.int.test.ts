import { mkdtempSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpClientPool, type McpClientPool, type McpClientPoolOptions, type McpServerSpec } from '../../src/mcp-client/client-pool.js';
import { startHttpMcpFixture, type HttpMcpFixture } from '../fixtures/mcp/http-server.js';
import { processAlive } from '../../src/base/process-alive.js';
import { failure } from '../helpers/expect-failure.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'node_modules/.bin');
const FLAKY = path.join(ROOT, 'test/fixtures/mcp/flaky-server.mjs');

const flaky = (name = 'flaky', ...flags: string[]): McpServerSpec => ({
  name,
  transport: 'stdio',
  command: process.execPath,
  args: [FLAKY, ...flags],
});

let pools: McpClientPool[] = [];
let httpFixtures: HttpMcpFixture[] = [];
let tempDirs: string[] = [];

function makePool(options?: McpClientPoolOptions): McpClientPool {
  const pool = createMcpClientPool(options);
  pools.push(pool);
  return pool;
}

afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
  await Promise.all(httpFixtures.map((fixture) => fixture.close()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  pools = [];
  httpFixtures = [];
  tempDirs = [];
});


async function pidOf(pool: McpClientPool, spec: McpServerSpec): Promise<number> {
  const pid = Number((await pool.callTool(spec, 'pid', {})).text);
  expect(pid).toBeGreaterThan(0);
  return pid;
}

describe('real servers from npm', () => {
  it('lists and calls mcp-server-filesystem tools over one reused connection', async () => {
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-pool-fs-')));
    tempDirs.push(dir);
    writeFileSync(path.join(dir, 'a.txt'), 'hello kiwi');
    mkdirSync(path.join(dir, 'sub'));
    const spec: McpServerSpec = { name: 'fs', transport: 'stdio', command: path.join(BIN, 'mcp-server-filesystem'), args: [dir] };
    const pool = makePool();

    const tools = await pool.listTools(spec);
    const read = tools.find((tool) => tool.name === 'read_text_file');
    expect(read).toMatchObject({ server: 'fs', qualifiedName: 'fs.read_text_file', inputSchema: { type: 'object' } });
    expect(read?.description).not.toBe('');
    expect(tools.map((tool) => tool.name)).toContain('list_directory');

    const file = await pool.callTool(spec, 'read_text_file', { path: path.join(dir, 'a.txt') });
    expect(file).toMatchObject({ isError: false, text: 'hello kiwi' });
    const listing = await pool.callTool(spec, 'fs.list_directory', { path: dir });
    expect(listing.text).toContain('[FILE] a.txt');
    expect(listing.text).toContain('[DIR] sub');
    // A refusal by the tool is an outcome, returned as a value.
    const outside = await pool.callTool(spec, 'read_text_file', { path: '/etc/hostname' });
    expect(outside.isError).toBe(true);

    // A 2025-era server: it answers server/discover "method not found", and gets the 2025 handshake on the same child.
    expect(pool.stats()).toMatchObject({ connections: 1, spawned: 1, protocols: { fs: '2025-11-25' } });
    const [pid] = pool.stats().pids;
    expect(pid).toBeGreaterThan(0);
    await pool.close();
    expect(processAlive(pid as number)).toBe(false);
  });

  it('calls mcp-server-everything over stdio with only the explicit environment', async () => {
    process.env.KIWI_POOL_TEST_SECRET = 'must-not-leak';
    try {
      const spec: McpServerSpec = {
        name: 'everything',
        transport: 'stdio',
        command: path.join(BIN, 'mcp-server-everything'),
        args: ['stdio'],
        env: { KIWI_POOL_VISIBLE: 'yes' },
      };
      const pool = makePool();
      expect((await pool.listTools(spec)).map((tool) => tool.qualifiedName)).toContain('everything.echo');
      expect(await pool.callTool(spec, 'echo', { message: 'hi' })).toMatchObject({ isError: false, text: 'Echo: hi' });
      const env = JSON.parse((await pool.callTool(spec, 'get-env', {})).text) as Record<string, string>;
      expect(env.KIWI_POOL_VISIBLE).toBe('yes');
      expect(env.PATH).toBe(process.env.PATH);
      expect(env).not.toHaveProperty('KIWI_POOL_TEST_SECRET');
      expect(pool.stats()).toMatchObject({ spawned: 1, protocols: { everything: '2025-11-25' } });
    } finally {
      delete process.env.KIWI_POOL_TEST_SECRET;
    }
  });
});

describe('connection lifecycle', () => {
  it('shares one connect between concurrent first calls', async () => {
    const pool = makePool();
    const spec = flaky();
    const [a, b, echo] = await Promise.all([pool.listTools(spec), pool.listTools(spec), pool.callTool(spec, 'echo', { text: 'x' })]);
    expect(a.map((tool) => tool.name)).toEqual(b.map((tool) => tool.name));
    expect(echo.text).toBe('x');
    expect(pool.stats()).toMatchObject({ connections: 1, spawned: 1 });
  });

  it('fails the call a crash interrupts, reaps the child and restarts it on the next call', async () => {
    const pool = makePool();
    const spec = flaky();
    const oldPid = await pidOf(pool, spec);

    const error = await failure(pool.callTool(spec, 'crash', {}), 'MCP_ERROR');
    expect(error.message).toContain('MCP server "flaky" exited during call to "crash"; it will be restarted on the next call.');
    expect(error.message).toContain('crashing on purpose');
    expect(processAlive(oldPid)).toBe(false);
    expect(pool.stats().connections).toBe(0);

    const newPid = await pidOf(pool, spec);
    expect(newPid).not.toBe(oldPid);
    expect(pool.stats()).toMatchObject({ spawned: 2, pids: [newPid] });
  });

  it('reconnects when the spec under a name changes, after the old child is gone', async () => {
    const pool = makePool();
    const oldPid = await pidOf(pool, flaky());
    const changed: McpServerSpec = { name: 'flaky', transport: 'stdio', command: process.execPath, args: [FLAKY], env: { FLAVOUR: 'new' } };
    expect((await pool.callTool(changed, 'env', { name: 'FLAVOUR' })).text).toBe('new');
    expect(processAlive(oldPid)).toBe(false);
    expect(pool.stats()).toMatchObject({ connections: 1, spawned: 2 });
  });

  it('closeServer reaps the child and the next call starts a new one', async () => {
    const pool = makePool();
    const pid = await pidOf(pool, flaky());
    await pool.closeServer('flaky');
    expect(processAlive(pid)).toBe(false);
    expect(pool.stats()).toMatchObject({ connections: 0, pids: [] });
    await pidOf(pool, flaky());
    expect(pool.stats().spawned).toBe(2);
  });

  it('close() reaps every child, cancels calls in flight and refuses later calls', async () => {
    const pool = makePool();
    const everything: McpServerSpec = { name: 'everything', transport: 'stdio', command: path.join(BIN, 'mcp-server-everything'), args: [] };
    await Promise.all([pool.listTools(flaky('one')), pool.listTools(flaky('two')), pool.listTools(everything)]);
    const pids = pool.stats().pids;
    expect(pids).toHaveLength(3);

    const hanging = failure(pool.callTool(flaky('one'), 'hang', {}), 'TOOL_CANCELLED');
    await pool.callTool(flaky('one'), 'wait_hangs', { started: 1, cancelled: 0 });
    await pool.close();
    const cancelled = await hanging;
    expect(cancelled.message).toContain('closed by the gateway');
    for (const pid of pids) expect(processAlive(pid)).toBe(false);
    expect(pool.stats()).toMatchObject({ connections: 0, pids: [] });
    expect((await failure(pool.listTools(flaky('one')), 'MCP_ERROR')).message).toContain('pool is closed');
  });

  it('reaps a child that ignores the end of stdin and SIGTERM', async () => {
    const pool = makePool();
    const pid = await pidOf(pool, flaky('stubborn', '--stubborn'));
    await pool.close();
    expect(processAlive(pid)).toBe(false);
  });

  it('reports a server that exits before the handshake, with its stderr', async () => {
    const pool = makePool();
    const error = await failure(pool.listTools(flaky('broken', '--exit-at-start')), 'MCP_ERROR');
    expect(error.message).toContain('exited before finishing the MCP handshake');
    expect(error.message).toContain('FLAKY_TOKEN is not set');
    expect(pool.stats()).toMatchObject({ connections: 0, pids: [] });
  });

  it('times out a server that never answers the handshake and reaps it', async () => {
    const pool = makePool({ connectTimeoutMs: 500 });
    const error = await failure(pool.listTools(flaky('mute', '--no-handshake')), 'MCP_TIMEOUT');
    expect(error.message).toContain('did not finish the MCP handshake within 500 ms');
    expect(error.details?.pid).toBeGreaterThan(0);
    expect(processAlive(error.details?.pid as number)).toBe(false);
    expect(pool.stats()).toMatchObject({ connections: 0, spawned: 1, pids: [] });
  });

  it('reports a command that cannot be started', async () => {
    const pool = makePool();
    const spec: McpServerSpec = { name: 'ghost', transport: 'stdio', command: '/nonexistent/mcp-server', args: [] };
    const error = await failure(pool.listTools(spec), 'SPAWN_FAILED');
    expect(error.message).toContain('Could not start MCP server "ghost"');
    expect(error.message).toContain('ENOENT');
  });
});

describe('calls', () => {
  it('returns tool failures as values and joins text parts', async () => {
    const pool = makePool();
    expect(await pool.callTool(flaky(), 'fail', {})).toMatchObject({ isError: true, text: 'the widget is broken' });
  });

  it('times out a call that never answers, cancels it on the server and keeps the connection', async () => {
    const pool = makePool({ callTimeoutMs: 1000 });
    const spec = flaky();
    const error = await failure(pool.callTool(spec, 'hang', {}), 'MCP_TIMEOUT');
    expect(error.message).toContain('did not answer call to "hang" within 1000 ms');
    expect((await pool.callTool(spec, 'wait_hangs', { started: 1, cancelled: 1 })).text).toBe('started 1, cancelled 1');
    expect(pool.stats().spawned).toBe(1);
  });

  it('cancels a call in flight when its signal aborts', async () => {
    const pool = makePool();
    const spec = flaky();
    const controller = new AbortController();
    const hanging = failure(pool.callTool(spec, 'hang', {}, controller.signal), 'TOOL_CANCELLED');
    await pool.callTool(spec, 'wait_hangs', { started: 1, cancelled: 0 });
    controller.abort();
    expect((await hanging).message).toContain('cancelled by the caller');
    expect((await pool.callTool(spec, 'wait_hangs', { started: 1, cancelled: 1 })).text).toBe('started 1, cancelled 1');
  });

  it('does not start anything for an already aborted signal', async () => {
    const pool = makePool();
    await failure(pool.callTool(flaky(), 'echo', { text: 'x' }, AbortSignal.abort()), 'TOOL_CANCELLED');
    await failure(pool.listTools(flaky(), AbortSignal.abort()), 'TOOL_CANCELLED');
    expect(pool.stats().spawned).toBe(0);
  });

  it('names close tools for an unknown tool, and accepts the qualified name', async () => {
    const pool = makePool();
    const error = await failure(pool.callTool(flaky(), 'ecko', { text: 'x' }), 'TOOL_NOT_FOUND');
    expect(error.message).toContain('MCP server "flaky" has no tool "ecko". Did you mean: echo?');
    expect((await pool.callTool(flaky(), 'flaky.echo', { text: 'q' })).text).toBe('q');
  });

  it('refuses result text over maxResultBytes and keeps the connection', async () => {
    const pool = makePool({ maxResultBytes: 1000 });
    const error = await failure(pool.callTool(flaky(), 'big', { bytes: 5000 }), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('returned 5000 bytes of text, over the 1000-byte cap');
    expect((await pool.callTool(flaky(), 'big', { bytes: 1000 })).text).toHaveLength(1000);
    expect(pool.stats().spawned).toBe(1);
  });

  it('drops a stdio connection whose message exceeds maxMessageBytes', async () => {
    const pool = makePool({ maxMessageBytes: 64 * 1024 });
    const oldPid = await pidOf(pool, flaky());
    const error = await failure(pool.callTool(flaky(), 'big', { bytes: 200_000 }), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('larger than 65536 bytes');
    expect((await pool.callTool(flaky(), 'echo', { text: 'again' })).text).toBe('again');
    // The replacement starts only after the old child is gone.
    expect(processAlive(oldPid)).toBe(false);
    expect(pool.stats().spawned).toBe(2);
  });
});

describe('tool schema cache', () => {
  it('refreshes on tools/list_changed before the TTL expires', async () => {
    let changed: () => void = () => {};
    const pool = makePool({ now: () => 0, onToolsChanged: (server) => server === 'flaky' && changed() });
    const spec = flaky();
    expect((await pool.listTools(spec)).map((tool) => tool.name)).not.toContain('fresh');
    const noticed = new Promise<void>((resolve) => (changed = resolve));
    await pool.callTool(spec, 'add_tool', { name: 'fresh', notify: true });
    await noticed;
    expect((await pool.listTools(spec)).map((tool) => tool.qualifiedName)).toContain('flaky.fresh');
  });

  it('serves the cached list until the TTL expires, and refetches when a called tool is missing', async () => {
    let clock = 0;
    const pool = makePool({ now: () => clock, schemaTtlMs: 10_000 });
    const spec = flaky();
    await pool.listTools(spec);
    await pool.callTool(spec, 'add_tool', { name: 'quiet', notify: false });
    expect((await pool.listTools(spec)).map((tool) => tool.name)).not.toContain('quiet');
    clock = 10_000;
    expect((await pool.listTools(spec)).map((tool) => tool.name)).toContain('quiet');

    await pool.callTool(spec, 'add_tool', { name: 'quieter', notify: false });
    expect((await pool.callTool(spec, 'quieter', {})).text).toBe('I am quieter');
  });
});

describe('Streamable HTTP', () => {
  async function fixture(): Promise<HttpMcpFixture> {
    const started = await startHttpMcpFixture();
    httpFixtures.push(started);
    return started;
  }

  it('lists and calls tools with the given headers, over one session', async () => {
    const server = await fixture();
    const pool = makePool();
    const spec: McpServerSpec = { name: 'remote', transport: 'http', url: server.url, headers: { Authorization: 'Bearer t0k' } };
    expect((await pool.listTools(spec)).map((tool) => tool.qualifiedName)).toContain('remote.echo');
    expect((await pool.callTool(spec, 'echo', { text: 'over http' })).text).toBe('over http');
    expect(server.lastAuthorization()).toBe('Bearer t0k');
    expect(server.sessionsStarted()).toBe(1);
    expect(pool.stats()).toMatchObject({ connections: 1, spawned: 0 });
  });

  it('opens a new session when the server forgot the old one', async () => {
    const server = await fixture();
    const pool = makePool();
    const spec: McpServerSpec = { name: 'remote', transport: 'http', url: server.url };
    await pool.callTool(spec, 'echo', { text: 'one' });
    await server.dropSessions();
    expect((await pool.callTool(spec, 'echo', { text: 'two' })).text).toBe('two');
    expect(server.sessionsStarted()).toBe(2);
  });

  it('reports a server that went away and drops the connection', async () => {
    const server = await fixture();
    const pool = makePool();
    const spec: McpServerSpec = { name: 'remote', transport: 'http', url: server.url };
    await pool.callTool(spec, 'echo', { text: 'one' });
    await server.close();
    const error = await failure(pool.callTool(spec, 'echo', { text: 'two' }), 'MCP_ERROR');
    expect(error.message).toContain('MCP server "remote" could not be reached during call to "echo"');
    expect(pool.stats().connections).toBe(0);
  });

  it('caps the size of an HTTP answer', async () => {
    const server = await fixture();
    const pool = makePool({ maxMessageBytes: 64 * 1024 });
    const spec: McpServerSpec = { name: 'remote', transport: 'http', url: server.url };
    const error = await failure(pool.callTool(spec, 'big', { bytes: 200_000 }), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('larger than 65536 bytes');
    expect((await pool.callTool(spec, 'echo', { text: 'after' })).text).toBe('after');
  });
});

describe('bad input', () => {
  const pool = () => makePool();

  it.each([
    ['an unknown transport', { name: 'x', transport: 'ftp', command: 'x', args: [] }, 'transport'],
    ['a missing args array', { name: 'x', transport: 'stdio', command: 'node' }, 'args'],
    ['an empty command', { name: 'x', transport: 'stdio', command: '', args: [] }, 'command'],
    ['a name with spaces', { name: 'my server', transport: 'stdio', command: 'node', args: [] }, 'name'],
    ['a non-http URL', { name: 'x', transport: 'http', url: 'file:///etc/passwd' }, 'url'],
    ['a bad env name', { name: 'x', transport: 'stdio', command: 'node', args: [], env: { 'A=B': 'c' } }, 'env'],
  ])('rejects a spec with %s', async (_label, spec, field) => {
    const error = await failure(pool().listTools(spec as unknown as McpServerSpec), 'INVALID_INPUT');
    expect(error.message).toContain('is invalid');
    expect(error.message).toContain(field);
  });

  it('rejects arguments that are not an object and an empty tool name', async () => {
    const p = pool();
    expect((await failure(p.callTool(flaky(), 'echo', [] as unknown as Record<string, unknown>), 'INVALID_INPUT')).message).toContain(
      'must be a JSON object, got an array',
    );
    await failure(p.callTool(flaky(), 'echo', null as unknown as Record<string, unknown>), 'INVALID_INPUT');
    expect((await failure(p.callTool(flaky(), '', {}), 'INVALID_INPUT')).message).toContain('Tool name must be a string of 1-512 characters');
    await failure(p.callTool(flaky(), 'x'.repeat(513), {}), 'INVALID_INPUT');
    expect(p.stats().spawned).toBe(0);
  });

  it('rejects invalid pool options', () => {
    expect(() => createMcpClientPool({ callTimeoutMs: -1 })).toThrow(/callTimeoutMs/);
    expect(() => createMcpClientPool({ maxResultBytes: 1.5 })).toThrow(/maxResultBytes/);
  });
});
