import { afterAll, describe, expect, it } from 'vitest';
import { createMcpClientPool } from '../../src/mcp-client/client-pool.js';
import { startSseMcpServer } from '../helpers/seed-format-servers.js';

const pool = createMcpClientPool({ maxMessageBytes: 16_384, maxResultBytes: 4096, connectTimeoutMs: 10_000 });
const servers: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await pool.close();
  await Promise.all(servers.map((s) => s.close()));
});

describe('MCP over the HTTP+SSE transport', () => {
  it('calls a tool with the spec headers, and drops a connection whose event is over the message cap', async () => {
    const server = await startSseMcpServer();
    servers.push(server);
    const spec = { name: 'sse_standin', transport: 'sse' as const, url: `${server.url}/mcp/sse`, headers: { 'X-Key': 'k' } };
    expect((await pool.callTool(spec, 'echo', { text: 'a' })).text).toBe('echo: a');
    expect(server.requests.every((r) => r.headers['x-key'] === 'k')).toBe(true);
    await expect(pool.callTool(spec, 'big', { bytes: 100_000 })).rejects.toMatchObject({ code: 'OUTPUT_TOO_LARGE', message: expect.stringMatching(/sent a message larger than 16384 bytes/) });
    expect((await pool.callTool(spec, 'echo', { text: 'again' })).text).toBe('echo: again');
  });
});
