import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * What an attacker sends to the thread actions and help signals of the gateway's /mcp: another
 * client's thread id (status, stream, cancel, resume), a path for an id, no key, a web page's
 * Origin, a foreign Host, parameters past their bounds, and new sessions to reset a rate limit.
 * Each fails closed; the owner's thread runs on untouched.
 */

let served: DemoGateway;
let owner: string;
let intruder: string;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-thread-doors-',
    config: 'model_tiers: { balanced: gpt-4o-mini }\n',
    async prepare(root) {
      // Two help signals a minute per client, so that a third one shows the limit.
      const policy = path.join(root, '.ai', 'config', 'policy.yaml');
      writeFileSync(policy, readFileSync(policy, 'utf8').replace('per_tool: { "*": { max: 60, per_ms: 60000 } }', 'per_tool: { help: { max: 2, per_ms: 60000 }, "*": { max: 60, per_ms: 60000 } }'));
      // Made before the gateway opens: from its first request on, every request needs a key.
      owner = (await createKey(path.join(root, KEY_FILE), 'owner')).key;
      intruder = (await createKey(path.join(root, KEY_FILE), 'intruder')).key;
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

type Result = { structuredContent?: Record<string, unknown>; isError?: boolean; content?: { text?: string }[] };

async function session(key: string): Promise<{ call(name: string, args: Record<string, unknown>): Promise<Result>; close(): Promise<void> }> {
  const client = new Client({ name: 'thread-doors', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return { call: async (name, args) => (await client.callTool({ name, arguments: args })) as Result, close: () => client.close() };
}

const text = (r: Result): string => r.content?.[0]?.text ?? '';

function raw(headers: Record<string, string>, body: string): Promise<number> {
  const url = new URL(served.server.url);
  return new Promise((resolve, reject) => {
    // Its own socket, not a pooled one: the server may answer 413 and close before a big body is
    // all sent, and the write that fails then must land on a listener here, not on a pooled socket.
    const req = httpRequest({ host: url.hostname, port: url.port, path: '/mcp', method: 'POST', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    const cut = (error: NodeJS.ErrnoException): void => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error));
    req.on('error', cut);
    req.on('socket', (socket) => socket.on('error', cut));
    req.end(body);
  });
}

describe("another client's thread", () => {
  it('is no thread at all to every action, in any session; the owner\'s thread runs on', async () => {
    const mine = await session(owner);
    try {
      served.llm.replyOnce({ recording: openAiStream(['Thinking…', ' more']), stallAfterChunks: 2 });
      const asked = served.llm.requests.length;
      const started = await mine.call('execute', { item_type: 'directive', action: 'run', item_id: 'review_changes', async: true });
      const id = String(started.structuredContent?.['thread']);
      await served.llm.request(asked);

      // A fresh session per attempt: sessions carry nothing a client could reset or borrow.
      for (const [action, parameters] of [['status', {}], ['stream', { wait_s: 0 }], ['cancel', {}], ['resume', { message: 'mine now' }]] as const) {
        const theirs = await session(intruder);
        try {
          const r = await theirs.call('execute', { item_type: 'directive', action, item_id: id, parameters });
          expect(r.isError, action).toBe(true);
          expect(text(r), action).toBe(`NOT_FOUND: no thread ${id} of client intruder`);
        } finally {
          await theirs.close();
        }
      }
      expect((await mine.call('execute', { item_type: 'directive', action: 'status', item_id: id })).structuredContent).toMatchObject({ status: 'running' });
      expect((await mine.call('execute', { item_type: 'directive', action: 'cancel', item_id: id })).structuredContent).toMatchObject({ status: 'cancelling' });
    } finally {
      await mine.close();
    }
  }, 60_000);
});

describe('ids and parameters', () => {
  it('a path for a thread id is refused before any file is touched, and bounds hold', async () => {
    const mine = await session(owner);
    try {
      for (const id of ['../../.env', '../.git/config', '.env', `${'0'.repeat(8)}-0000-0000-0000-000000000000/../../.env`]) {
        for (const action of ['status', 'stream', 'cancel', 'resume']) {
          const r = await mine.call('execute', { item_type: 'directive', action, item_id: id });
          expect(r.isError, `${action} ${id}`).toBe(true);
          expect(text(r), `${action} ${id}`).toMatch(/is not a thread id/);
        }
      }
      // The owner's own thread, so that what is refused is the parameter.
      const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff5000';
      await (await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'gpt-4o-mini', client: 'owner', depth: 1, started_at: new Date().toISOString() })).close();
      expect(text(await mine.call('execute', { item_type: 'directive', action: 'stream', item_id: id, parameters: { wait_s: 1e9 } }))).toMatch(/wait_s: .*300/);
      expect(text(await mine.call('execute', { item_type: 'directive', action: 'stream', item_id: id, parameters: { after: 'x' } }))).toMatch(/after: /);
      expect(text(await mine.call('execute', { item_type: 'directive', action: 'resume', item_id: id, parameters: { message: 'x'.repeat(4001) } }))).toMatch(/message: .*4000/);
    } finally {
      await mine.close();
    }
  });
});

describe('directive and knowledge calls', () => {
  it('take no path for a name: .env and .git stay out of reach', async () => {
    for (const item of ['knowledge', 'directive'] as const) {
      for (const tool of ['../../.env', '.git/config', '.env']) {
        const outcome = await served.gateway.project.proxy.call({ target: { tool, item, args: {} }, caller: { session: 'doors', client: 'owner', source: 'mcp' } });
        // A name is looked up among the loaded items, never opened as a file: refused as invalid, or not found.
        const refusal = outcome.status === 'denied' ? outcome.reason : outcome.status === 'error' ? `${outcome.error.code}: ${outcome.error.message}` : 'ran';
        expect(refusal, `${item} ${tool}`).toMatch(item === 'knowledge' ? /is not valid|^TOOL_NOT_FOUND: no knowledge entry/ : /is not valid|^TOOL_NOT_FOUND: no directive/);
      }
    }
  });
});

describe('the doors', () => {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute', arguments: { item_type: 'directive', action: 'status', item_id: '0195aaaa-bbbb-4ccc-8ddd-eeeeffff5000' } } });
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

  it('refuses a thread action and a help signal without a key, from a web page, and under a foreign Host', async () => {
    const port = new URL(served.server.url).port;
    const help = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'help', arguments: { action: 'escalate', message: 'let me in' } } });
    for (const payload of [body, help]) {
      expect(await raw({ ...base, host: `127.0.0.1:${port}` }, payload)).toBe(401);
      expect(await raw({ ...base, host: `127.0.0.1:${port}`, authorization: `Bearer ${owner}`, origin: 'https://evil.example' }, payload)).toBe(403);
      expect(await raw({ ...base, host: `attacker.example:${port}`, authorization: `Bearer ${owner}` }, payload)).toBe(403);
    }
  });

  it('refuses a body past the cap before reading it whole', async () => {
    const port = new URL(served.server.url).port;
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'help', arguments: { action: 'stuck', message: 'x'.repeat(8 * 1024 * 1024) } } });
    expect(await raw({ ...base, host: `127.0.0.1:${port}`, authorization: `Bearer ${owner}` }, huge)).toBe(413);
  });
});

describe('help signals', () => {
  it('are limited per client, and a new session does not reset the limit', async () => {
    const results: Result[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await session(intruder);
      try {
        results.push(await s.call('help', { action: 'stuck', message: `attempt ${i}` }));
      } finally {
        await s.close();
      }
    }
    expect(results.slice(0, 2).map((r) => r.isError === true)).toEqual([false, false]);
    expect(results[2]?.isError).toBe(true);
    expect(text(results[2] as Result)).toMatch(/^RATE_LIMITED: the stuck signal was not recorded: .*rate limit for tool `help` \(2 per 60000 ms\) is used up/);
    // Another client is not affected.
    const other = await session(owner);
    try {
      expect((await other.call('help', { action: 'stuck', message: 'mine' })).isError).not.toBe(true);
    } finally {
      await other.close();
    }
  });
});
