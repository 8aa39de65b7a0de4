import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../../src/audit/audit-record.js';
import { createKey, KEY_FILE } from '../../../src/clients/key-store.js';
import { fileThreadStore } from '../../../src/threads/file-thread-store.js';
import type { ThreadHeader } from '../../../src/threads/thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../../helpers/demo-gateway.js';

/**
 * The admin API's audit log and threads on `kiwi serve`'s gateway (a copy of the demo `.ai/`,
 * keys in its file): who may read them, what a bad parameter gets, and that the filters filter.
 * Two clients call tools through /mcp, so that the audit log holds both clients' records, one of
 * them a denial; two threads are written into the gateway's thread store, one ended, one cut short.
 */

let served: DemoGateway;
const keys = { admin: '', approver: '', alpha: '', beta: '' };
const ended = randomUUID();
const cutShort = randomUUID();

beforeAll(async () => {
  // The keys are made before the gateway opens: from its first request on, every request needs one.
  served = await serveDemoGateway({
    prefix: 'kiwi-admin-audit-',
    async prepare(root) {
      const file = path.join(root, KEY_FILE);
      keys.admin = (await createKey(file, 'ops', { roles: ['admin'] })).key;
      keys.approver = (await createKey(file, 'reviewer', { roles: ['approver'] })).key;
      keys.alpha = (await createKey(file, 'alpha')).key;
      keys.beta = (await createKey(file, 'beta')).key;
    },
  });

  await callTools(keys.alpha, [['word_count', { path: 'README.md' }]]);
  // http_client is not in the demo policy's tools: a denial.
  await callTools(keys.beta, [['word_count', { path: 'README.md' }], ['http_client', { url: 'http://127.0.0.1:9/', method: 'GET' }]]);

  const store = fileThreadStore(served.root);
  const header = (id: string, client: string, startedAt: string): ThreadHeader => ({ type: 'thread', id, directive: 'review_changes', inputs: { focus: 'docs' }, model: 'gpt-4o-mini', client, depth: 0, started_at: startedAt });
  const first = await store.create(header(cutShort, 'beta', '2026-01-01T09:00:00.000Z'));
  await first.append({ type: 'turn', turn: 1, text: 'Looking at the docs.' });
  await first.close(); // no end: nobody writes it any more
  const second = await store.create(header(ended, 'alpha', '2026-01-01T10:00:00.000Z'));
  await second.append({ type: 'turn', turn: 1, text: 'Reading the diff.' });
  await second.append({ type: 'call', call_id: 'c1', tool: 'git_diff', arguments: {} });
  await second.append({ type: 'result', call_id: 'c1', tool: 'git_diff', status: 'ok', text: 'no changes' });
  await second.append({ type: 'end', status: 'completed', result: 'Nothing to review.', steps_taken: 1, ended_at: '2026-01-01T10:00:05.000Z' });
  await second.close();
}, 120_000);

afterAll(async () => {
  await served?.close();
});

/** Calls each tool in one MCP session of the key's client; the audit record is written before the result comes back. */
async function callTools(key: string, calls: [tool: string, parameters: Record<string, unknown>][]): Promise<void> {
  const client = new Client({ name: 'admin-audit', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  try {
    for (const [tool, parameters] of calls) await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: tool, parameters } });
  } finally {
    await client.close();
  }
}

async function get(pathAndQuery: string, key?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${served.server.url}/admin/v1${pathAndQuery}`, key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const records = (body: Record<string, unknown>): AuditRecord[] => body['records'] as AuditRecord[];

describe('who may read the audit log and the threads', () => {
  const routes = ['/audit', '/threads', `/threads/${ended}`];

  it('an admin key reads both', async () => {
    for (const route of routes) expect((await get(route, keys.admin)).status, route).toBe(200);
  });

  it('an approver key and a client key are refused with 403, naming the role it takes', async () => {
    // The approver's own areas are open to it: the door is the area's, not the request guard's.
    expect((await get('/approvals', keys.approver)).status).toBe(200);
    for (const route of routes) {
      for (const key of [keys.approver, keys.alpha]) {
        const { status, body } = await get(route, key);
        expect(status, route).toBe(403);
        expect(body).toMatchObject({ code: 'FORBIDDEN', error: expect.stringMatching(/^the admin API's (audit|threads) need a key with the admin role/) });
      }
    }
  });

  it('no key is 401', async () => {
    for (const route of routes) expect((await get(route)).status, route).toBe(401);
  });
});

describe('GET /admin/v1/audit', () => {
  it("answers records newest first, every client's", async () => {
    const { body } = await get('/audit', keys.admin);
    expect(body).toMatchObject({ next_cursor: '', scan_capped: false });
    const got = records(body);
    expect(new Set(got.map((r) => r.client))).toEqual(new Set(['alpha', 'beta']));
    const times = got.map((r) => Date.parse(r.ts));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('filters by client, tool and decision', async () => {
    const alpha = records((await get('/audit?client=alpha', keys.admin)).body);
    expect(alpha.length).toBeGreaterThan(0);
    expect(alpha.every((r) => r.client === 'alpha')).toBe(true);
    const beta = records((await get('/audit?client=beta', keys.admin)).body);
    expect(beta.map((r) => r.tool).sort()).toEqual(['http_client', 'word_count']);
    const denied = records((await get('/audit?decision=deny', keys.admin)).body);
    expect(denied.map((r) => [r.client, r.tool, r.decision])).toEqual([['beta', 'http_client', 'deny']]);
    const counted = records((await get('/audit?tool=word_count&decision=allow', keys.admin)).body);
    expect(counted.map((r) => r.client).sort()).toEqual(['alpha', 'beta']);
    expect(records((await get('/audit?client=nobody', keys.admin)).body)).toEqual([]);
  });

  it('filters by time: nothing before the calls, all of them since', async () => {
    expect(records((await get('/audit?until=2020-01-01', keys.admin)).body)).toEqual([]);
    const since = records((await get(`/audit?since=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}`, keys.admin)).body);
    expect(since).toHaveLength(records((await get('/audit', keys.admin)).body).length);
  });

  it('pages with a cursor, each record once', async () => {
    const all = records((await get('/audit', keys.admin)).body).map((r) => r.call_id);
    const seen: string[] = [];
    let cursor = '';
    do {
      const { body } = await get(`/audit?limit=1${cursor === '' ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, keys.admin);
      seen.push(...records(body).map((r) => r.call_id));
      cursor = String(body['next_cursor']);
    } while (cursor !== '' && seen.length <= all.length);
    expect(seen).toEqual(all);
  });

  it('refuses a bad parameter with 400 and what to send instead', async () => {
    const refusals: [string, RegExp][] = [
      ['decision=maybe', /^invalid decision "maybe": use one of allow, deny$/],
      ['since=yesterday', /^since "yesterday" is not a time: use ISO 8601 with a zone, e\.g\. 2026-11-28 or 2026-11-28T09:30:00Z$/],
      ['until=2026-02-30', /^until "2026-02-30" is not a time/],
      ['since=2026-01-01T10:00:00', /^since "2026-01-01T10:00:00" is not a time: use ISO 8601 with a zone/],
      ['since=2026-01-02&until=2026-01-01', /^since \(2026-01-02T00:00:00\.000Z\) must be before until \(2026-01-01T00:00:00\.000Z\)/],
      [`client=${'a'.repeat(300)}`, /^the client is longer than 256 characters$/],
      ['tool=word%01count', /^the tool contains a control character$/],
      ['cursor=not-a-cursor', /^the cursor is not one the audit log in .* gave; pass a page's next_cursor unchanged/],
    ];
    for (const [query, message] of refusals) {
      const { status, body } = await get(`/audit?${query}`, keys.admin);
      expect(status, query).toBe(400);
      expect(body, query).toMatchObject({ code: 'VALIDATION_ERROR', error: expect.stringMatching(message) });
    }
  });
});

describe('GET /admin/v1/threads', () => {
  it('lists the threads, the most recently written first, with how each stands', async () => {
    const { body } = await get('/threads', keys.admin);
    expect(body).toEqual({
      threads: [
        { id: ended, directive: 'review_changes', client: 'alpha', model: 'gpt-4o-mini', depth: 0, started_at: '2026-01-01T10:00:00.000Z', status: 'completed', ended_at: '2026-01-01T10:00:05.000Z', steps_taken: 1 },
        { id: cutShort, directive: 'review_changes', client: 'beta', model: 'gpt-4o-mini', depth: 0, started_at: '2026-01-01T09:00:00.000Z', status: 'cut_short' },
      ],
      more: false,
    });
    expect((await get('/threads?limit=1', keys.admin)).body).toMatchObject({ threads: [{ id: ended }], more: true });
  });

  it("shows a thread's transcript a page of lines at a time", async () => {
    const whole = (await get(`/threads/${ended}`, keys.admin)).body;
    expect(whole).toMatchObject({ thread: { id: ended, status: 'completed' }, next_after: 5, more: false });
    expect((whole['lines'] as { type: string }[]).map((l) => l.type)).toEqual(['thread', 'turn', 'call', 'result', 'end']);
    const page = (await get(`/threads/${ended}?after=1&limit=2`, keys.admin)).body;
    expect(page).toMatchObject({ lines: [{ type: 'turn', text: 'Reading the diff.' }, { type: 'call', tool: 'git_diff' }], next_after: 3, more: true });
    expect((await get(`/threads/${ended}?after=5`, keys.admin)).body).toMatchObject({ lines: [], next_after: 5, more: false });
    expect((await get(`/threads/${cutShort}`, keys.admin)).body).toMatchObject({ thread: { status: 'cut_short', client: 'beta' } });
  });

  it('answers 404 for a thread that does not exist and 400 for what is not a thread id', async () => {
    expect(await get(`/threads/${randomUUID()}`, keys.admin)).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', error: expect.stringMatching(/^no thread /) } });
    expect(await get('/threads/..%2F..%2Fetc%2Fpasswd', keys.admin)).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR', error: expect.stringMatching(/is not a thread id \(a UUID\); GET \/admin\/v1\/threads lists them$/) } });
  });
});
