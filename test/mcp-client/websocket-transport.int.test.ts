import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpClientPool, type McpServerSpec } from '../../src/mcp-client/client-pool.js';
import { startWebSocketMcpServer, type WebSocketMcpServer } from '../helpers/websocket-mcp-server.js';

/**
 * `transport: websocket` against a real WebSocket MCP server on 127.0.0.1 (the SDK's McpServer
 * behind RFC 6455 framing): the auth header goes on the handshake, a message over the cap drops
 * the connection, and a server that goes away is reconnected on the next call.
 */
let server: WebSocketMcpServer;
const pool = createMcpClientPool({ maxMessageBytes: 64 * 1024, connectTimeoutMs: 10_000 });

beforeAll(async () => {
  server = await startWebSocketMcpServer('s3cret');
});
afterAll(async () => {
  await pool.close();
  await server?.close();
});

const spec = (token: string): McpServerSpec => ({ name: `ws_${token}`, transport: 'websocket', url: server.url, headers: { authorization: `Bearer ${token}` } });

describe('an MCP server over a WebSocket', () => {
  it('lists and calls its tools with the auth header on the handshake', async () => {
    expect((await pool.listTools(spec('s3cret'))).map((t) => t.name).sort()).toEqual(['big', 'echo', 'era']);
    expect((await pool.callTool(spec('s3cret'), 'echo', { text: 'over ws' })).text).toBe('over ws');
  });

  it('is refused without the right key, saying the handshake failed', async () => {
    const before = server.accepted;
    await expect(pool.callTool(spec('wrong'), 'echo', { text: 'x' })).rejects.toThrow(/Could not connect to MCP server "ws_wrong"/);
    expect(server.accepted).toBe(before);
  });

  it('refuses a message over the cap by dropping the connection, and the next call opens a new one', async () => {
    expect((await pool.callTool(spec('s3cret'), 'big', { bytes: 60_000 })).text).toHaveLength(60_000);
    await expect(pool.callTool(spec('s3cret'), 'big', { bytes: 200_000 })).rejects.toThrow(/MCP server "ws_s3cret" exited during/);
    const before = server.accepted;
    expect((await pool.callTool(spec('s3cret'), 'echo', { text: 'again' })).text).toBe('again');
    expect(server.accepted).toBe(before + 1);
  });

  it('notices a server that goes away, and reconnects on the next call', async () => {
    expect((await pool.callTool(spec('s3cret'), 'echo', { text: 'one' })).text).toBe('one');
    const before = server.accepted;
    server.dropAll();
    await expect.poll(() => pool.callTool(spec('s3cret'), 'echo', { text: 'two' }).then((r) => r.text, (e: Error) => e.message), { timeout: 10_000 }).toBe('two');
    expect(server.accepted).toBeGreaterThan(before);
  });
});
