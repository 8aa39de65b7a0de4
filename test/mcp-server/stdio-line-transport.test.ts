import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createStdioLineTransport } from '../../src/mcp-server/stdio-line-transport.js';
import { failure } from '../helpers/expect-failure.js';

/**
 * The capped stdio transport under the real MCP SDK server, over pipes written and read as raw
 * lines: bad lines get JSON-RPC errors and the server goes on, calls in flight included.
 * (test/mcp-server/mcp-stdio.int.test.ts does the same through the spawned `kiwi mcp`.)
 */

interface Pipe {
  send(line: string | Buffer): void;
  next(): Promise<Record<string, any>>;
  release(): void;
  errors: string[];
  server: McpServer;
}

const open: McpServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function serve(maxLineBytes?: number): Promise<Pipe> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = new McpServer({ name: 't', version: '1' });
  server.registerTool('wait', { inputSchema: { label: z.string() } }, async ({ label }) => {
    await released;
    return { content: [{ type: 'text', text: `done ${label}` }] };
  });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
  const transport = createStdioLineTransport(stdin, stdout, maxLineBytes === undefined ? {} : { maxLineBytes });
  const errors: string[] = [];
  await server.connect(transport);
  const onerror = transport.onerror;
  transport.onerror = (error) => {
    errors.push(error.message);
    onerror?.(error);
  };
  open.push(server);
  const lines = createInterface({ input: stdout })[Symbol.asyncIterator]();
  const pipe: Pipe = {
    send: (line) => stdin.write(line),
    async next() {
      const r = await lines.next();
      expect(r.done).toBeFalsy();
      return JSON.parse(r.value as string) as Record<string, any>;
    },
    release,
    errors,
    server,
  };
  pipe.send(`${JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`);
  expect(await pipe.next()).toMatchObject({ id: 0, result: { serverInfo: { name: 't' } } });
  pipe.send(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  return pipe;
}

const call = (id: number, name: string, args: Record<string, unknown>): string => `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })}\n`;

describe('the capped stdio line transport', () => {
  it('answers an oversized line with a JSON-RPC error, drops it to its newline, and finishes the call in flight and later ones', async () => {
    const pipe = await serve(1024);
    pipe.send(call(1, 'wait', { label: 'in flight' }));
    // 5 KiB in pieces, the newline in the last one: none of it may be buffered past the cap.
    const big = call(2, 'echo', { text: 'x'.repeat(5000) });
    for (let i = 0; i < big.length; i += 700) pipe.send(big.slice(i, i + 700));
    expect(await pipe.next()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'A message line is longer than the limit of 1024 bytes; it was dropped. Send smaller messages (one JSON-RPC message a line)' },
    });
    pipe.send(call(3, 'echo', { text: 'after' }));
    expect(await pipe.next()).toMatchObject({ id: 3, result: { content: [{ type: 'text', text: 'after' }] } });
    pipe.release();
    expect(await pipe.next()).toMatchObject({ id: 1, result: { content: [{ type: 'text', text: 'done in flight' }] } });
    expect(pipe.errors).toEqual([expect.stringContaining('longer than the limit')]);
  });

  it('a line that is not JSON is a -32700 parse error; the next line is served', async () => {
    const pipe = await serve();
    pipe.send('{"jsonrpc": "2.0", "id": 4, "method": \n');
    expect(await pipe.next()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringMatching(/^Parse error: a line is not JSON \(.+\); send one JSON-RPC message a line$/) } });
    pipe.send(call(5, 'echo', { text: 'still here' }));
    expect(await pipe.next()).toMatchObject({ id: 5, result: { content: [{ text: 'still here' }] } });
  });

  it('JSON that is not JSON-RPC, or nests too deeply, is a -32600 answered with its id', async () => {
    const pipe = await serve();
    pipe.send('{"jsonrpc": "2.0", "id": 6, "method": 17}\n');
    expect(await pipe.next()).toMatchObject({ id: 6, error: { code: -32600, message: expect.stringContaining('not a JSON-RPC 2.0 message') } });
    pipe.send(`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"echo","arguments":{"text":${'['.repeat(5000)}${']'.repeat(5000)}}}}\n`);
    expect(await pipe.next()).toEqual({ jsonrpc: '2.0', id: 'deep', error: { code: -32600, message: 'Invalid request: the message is nested more than 128 levels deep; flatten it' } });
    pipe.send('[1, 2]\n');
    expect(await pipe.next()).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('several messages in one chunk, CRLF endings and blank lines are read as lines', async () => {
    const pipe = await serve();
    pipe.send(Buffer.from(`\r\n${call(7, 'echo', { text: 'a' }).replace('\n', '\r\n')}\n${call(8, 'echo', { text: 'b' })}`));
    expect(await pipe.next()).toMatchObject({ id: 7, result: { content: [{ text: 'a' }] } });
    expect(await pipe.next()).toMatchObject({ id: 8, result: { content: [{ text: 'b' }] } });
  });

  it('refuses a cap that is not a positive whole number', async () => {
    await failure(
      (async () => createStdioLineTransport(new PassThrough(), new PassThrough(), { maxLineBytes: 0 }))(),
      'INVALID_INPUT',
    );
  });
});
