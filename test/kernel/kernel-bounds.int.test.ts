import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../src/app/gateway-config.js';
import { createExecutions, LIST_PAGE_LABEL_BYTES } from '../../src/kernel/executions.js';
import { DEFAULT_KERNEL_LIMITS, TOOLS_PAGE_MAX_BYTES } from '../../src/kernel/kernel-limits.js';
import { KERNEL_MIGRATIONS } from '../../src/kernel/kernel-migrations.js';
import { KERNEL_STATE_DIR } from '../../src/kernel/open-kernel.js';
import { createRetention } from '../../src/kernel/kernel-retention.js';
import { createToolSchemas } from '../../src/kernel/tool-schemas.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { openPgliteDb } from '../../src/store/sql/pglite-db.js';
import type { SqlDb } from '../../src/store/sql/sql-db.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { uniqueName, useKernelServer, type Answer } from '../fixtures/kernel/kernel-server.js';
import { openSse, type SseClient } from '../fixtures/kernel/sse-client.js';
import { embeddedKernelRoot } from '../helpers/run-resources.js';

/**
 * Bounded kernel state (issue 22 finding 8, and 40,000 labels on one execution): the sizes of
 * one execution, per-client quotas on live executions, runners and published tools (409 naming
 * the gateway.yaml key, while another client goes on), schemas of runners that never connect
 * and executions ended past the retention time deleted by the watcher's sweep on a clock the
 * test moves, GET /v0/tools a bounded page at a time, and the database's size in /metrics.
 */

let clock = Date.parse('2026-11-23T10:00:00.000Z');
const now = (): Date => new Date(clock);
const MINUTE = 60_000;
const DAY = 86_400_000;

const limits = { maxLiveExecutionsPerClient: 3, maxExecutionsPerClient: 8, maxInputBytesPerClient: 600 * 1024, maxRunnersPerClient: 3, maxToolsPerClient: 5, maxToolBytesPerClient: 100 * 1024 };
const grants = { roles: ['client' as const, 'runner' as const], tools: ['*'] };
const clients = ['labeler', 'alpha', 'beta', 'fleet', 'other', 'tooler', 'heavy', 'pager', 'filler', 'bystander'];

// The execution timeout is out of the way: the clock moves by days, and only retention should act.
describe.each(kernelBackends({ now, reaperIntervalMs: 0, queueIntervalMs: 0, executionTimeoutMs: 3650 * DAY, limits }))('on %s', (_backend, open) => {
  const server = useKernelServer(open, { bearerToken: true, keys: Object.fromEntries(clients.map((c) => [c, grants])), gatewayMetrics: { metrics: () => ({ uptime_s: 1 }) } });
  const as = (client: string, method: string, p: string, body?: unknown): Promise<Answer> => server.request(method, p, { token: server.tokenOf(client), ...(body === undefined ? {} : { body }) });
  const create = (client: string, body: Record<string, unknown> = {}): Promise<Answer> => as(client, 'POST', '/v0/executions', { agent_id: uniqueName('agent'), ...body });
  /** POST /v0/runners/{id}/tools as `client` (undefined: the helpers' own client); 204 has no body. */
  const publish = async (client: string | undefined, runner: string, tools: unknown[]): Promise<{ status: number; body: Record<string, unknown> }> => {
    const token = client === undefined ? (server.token as string) : server.tokenOf(client);
    const res = await fetch(`${server.url}/v0/runners/${runner}/tools`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ tools }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  };
  const toolIds = async (prefix: string): Promise<string[]> => ((await server.get(`/v0/tools?prefix=${prefix}`)).body as unknown as { id: string }[]).map((t) => t.id);

  it('refuses 65 labels, a long label key or value, and an input over 256 KiB with a 400 that names the bound; takes 64 labels and an input at the cap', async () => {
    const labels = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `v${i}`]));
    expect(await create('labeler', { labels: labels(65) })).toEqual({ status: 400, body: { error: 'labels has 65 entries; an execution may have at most 64', code: 'VALIDATION_ERROR' } });
    expect(await create('labeler', { labels: { ['k'.repeat(65)]: 'v' } })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^label key "k+" must be 1 to 64 characters$/) } });
    expect(await create('labeler', { labels: { k: 'v'.repeat(257) } })).toEqual({ status: 400, body: { error: 'label "k" is longer than 256 characters', code: 'VALIDATION_ERROR' } });
    // A JSON string is its characters and two quotes.
    const cap = DEFAULT_KERNEL_LIMITS.maxInputBytes;
    expect(await create('labeler', { input: 'x'.repeat(cap - 1) })).toEqual({
      status: 400,
      body: { error: `input is ${cap + 1} bytes as JSON; an execution's input may be at most ${cap} bytes (kernel.max_input_bytes in .ai/config/gateway.yaml)`, code: 'VALIDATION_ERROR' },
    });

    const tag = uniqueName('tag');
    const full = await create('labeler', { labels: { ...labels(63), tag }, input: 'x'.repeat(cap - 2) });
    expect(full.status).toBe(201);
    expect(Object.keys(full.body['labels'] as object)).toHaveLength(64);
    expect((full.body['input'] as string).length).toBe(cap - 2);
    // Every label is stored for the list filter.
    const listed = (await as('labeler', 'GET', `/v0/executions?label=tag:${tag}&label=k62:v62`)).body['executions'] as { id: string }[];
    expect(listed.map((e) => e.id)).toEqual([full.body['id']]);
  });

  it("refuses a client's execution over its live quota with a 409 that names the quota, while another client goes on; an ended one makes room", async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await create('alpha');
      expect(answer.status).toBe(201);
      made.push(answer.body['id'] as string);
    }
    const over = await create('alpha');
    expect(over.status).toBe(409);
    expect(over.body['code']).toBe('CONFLICT');
    expect(over.body['error']).toBe(
      'quota exceeded: client "alpha" has 3 executions not ended, the most it may have (kernel.max_live_executions_per_client); wait for some to end, or cancel those it no longer needs, or ask the gateway\'s operator to raise kernel.max_live_executions_per_client in .ai/config/gateway.yaml',
    );
    expect((await create('beta')).status).toBe(201);
    expect((await as('alpha', 'POST', `/v0/executions/${made[0] as string}/cancel`)).status).toBe(200);
    expect((await create('alpha')).status).toBe(201);
    expect((await create('alpha')).status).toBe(409);
  });

  it("keeps a client's share of executions, ended ones too: creating and cancelling past it deletes its oldest ended ones, by count and by input bytes, while another client's stay", async () => {
    const listed = async (client: string): Promise<string[]> => ((await as(client, 'GET', '/v0/executions?limit=200')).body['executions'] as { id: string }[]).map((e) => e.id);
    /** What the client keeps: its executions, and the bytes of their inputs as JSON. */
    const kept = async (client: string): Promise<{ n: number; bytes: number }> => {
      const ids = await listed(client);
      let bytes = 0;
      for (const id of ids) bytes += JSON.stringify((await as(client, 'GET', `/v0/executions/${id}`)).body['input']).length;
      return { n: ids.length, bytes };
    };
    const theirs = await create('bystander', { input: 'x'.repeat(200_000) });
    expect((await as('bystander', 'POST', `/v0/executions/${theirs.body['id'] as string}/cancel`)).status).toBe(200);

    // The attack: create and cancel, never at the live quota; 20 small ones keep the newest 8.
    const made: string[] = [];
    for (let i = 0; i < 20; i++) {
      clock += 1; // one execution a millisecond: their ends are in the order they were made
      const answer = await create('filler', { input: { i } });
      expect(answer.status).toBe(201);
      made.push(answer.body['id'] as string);
      expect((await as('filler', 'POST', `/v0/executions/${answer.body['id'] as string}/cancel`)).status).toBe(200);
    }
    expect((await listed('filler')).sort()).toEqual(made.slice(-8).sort());
    expect((await server.get(`/v0/executions/${made[0] as string}`)).status).toBe(404);
    // With inputs of ~100 KB, the bytes bind first: six fit in 600 KiB.
    for (let i = 0; i < 12; i++) {
      // A millisecond each here too: at one instant, "oldest" would fall to the uuidv7s' random bits.
      clock += 1;
      const answer = await create('filler', { input: 'y'.repeat(100_000) });
      expect(answer.status).toBe(201);
      expect((await as('filler', 'POST', `/v0/executions/${answer.body['id'] as string}/cancel`)).status).toBe(200);
    }
    expect(await kept('filler')).toEqual({ n: 6, bytes: 6 * 100_002 });
    expect(await listed('bystander')).toEqual([theirs.body['id']]);

    // Executions not ended are never deleted: when they fill the share, a create is refused, naming the bound.
    for (let i = 0; i < 2; i++) expect((await create('filler', { input: 'z'.repeat(250_000) })).status).toBe(201);
    const over = await create('filler', { input: 'z'.repeat(250_000) });
    expect(over).toEqual({
      status: 409,
      body: {
        error: `quota exceeded: client "filler" would keep 750006 bytes of inputs in executions not ended, over the 614400 it may keep (kernel.max_input_bytes_per_client); wait for some to end, cancel those it no longer needs, or send smaller inputs, or ask the gateway's operator to raise kernel.max_input_bytes_per_client in .ai/config/gateway.yaml`,
        code: 'CONFLICT',
      },
    });
    // A refused create deletes nothing: the last ended one (~100 KB) is still there with the two live ones.
    expect(await kept('filler')).toEqual({ n: 3, bytes: 100_002 + 2 * 250_002 });
    expect((await create('bystander', { input: 'z'.repeat(250_000) })).status).toBe(201);
  });

  it("refuses a client's runner over its runner quota, by publish and by stream (a JSON 409, no stream), while another client goes on; an unregistered one makes room", async () => {
    const fleet = [1, 2, 3, 4].map(() => uniqueName('fleet'));
    const [r1, r2, r3, r4] = fleet as [string, string, string, string];
    expect((await publish('fleet', r1, [])).status).toBe(204);
    expect((await publish('fleet', r2, [])).status).toBe(204);
    const streams: SseClient[] = [];
    try {
      const stream = await openSse(`${server.url}/v0/runners/stream?runner_id=${r3}&consumer_id=${r3}-c`, { authorization: `Bearer ${server.tokenOf('fleet')}` });
      streams.push(stream);
      expect(stream.status).toBe(200);
      const refused = await publish('fleet', r4, []);
      expect(refused).toEqual({
        status: 409,
        body: {
          error: `quota exceeded: client "fleet" has 3 runners, the most it may have (kernel.max_runners_per_client); unregister runners it no longer uses (DELETE /v0/runners/{id}; one with no stream is forgotten after the retention time), or ask the gateway's operator to raise kernel.max_runners_per_client in .ai/config/gateway.yaml`,
          code: 'CONFLICT',
        },
      });
      const res = await fetch(`${server.url}/v0/runners/stream?runner_id=${r4}&consumer_id=${r4}-c`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${server.tokenOf('fleet')}` } });
      expect(res.status).toBe(409);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await res.json()) as { error: string }).error).toMatch(/^quota exceeded: client "fleet" has 3 runners/);
      // The runners it has go on; another client's new one is taken.
      expect((await publish('fleet', r3, [])).status).toBe(204);
      expect((await publish('other', uniqueName('other'), [])).status).toBe(204);
      expect((await as('fleet', 'DELETE', `/v0/runners/${r1}`)).status).toBe(200);
      expect((await publish('fleet', r4, [])).status).toBe(204);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it("refuses tools past a client's quota across all its runners, by count and by bytes; a runner's own republish replaces its share", async () => {
    const p = uniqueName('q');
    const tools = (...names: string[]) => names.map((n) => ({ id: `${p}_${n}` }));
    const [a, b, c] = [uniqueName('ta'), uniqueName('tb'), uniqueName('tc')];
    expect((await publish('tooler', a, tools('a1', 'a2', 'a3'))).status).toBe(204);
    expect((await publish('tooler', b, tools('b1', 'b2'))).status).toBe(204);
    const over = await publish('tooler', c, tools('c1'));
    expect(over.status).toBe(409);
    expect(over.body['error']).toMatch(/^quota exceeded: client "tooler" would have 6 published tools across its runners, over the 5 it may have \(kernel\.max_tools_per_client\); .* raise kernel\.max_tools_per_client in \.ai\/config\/gateway\.yaml$/);
    expect(await toolIds(p)).toEqual([`${p}_a1`, `${p}_a2`, `${p}_a3`, `${p}_b1`, `${p}_b2`]);
    // Replacing a's three with three others stays at 5; withdrawing a's makes room for c's.
    expect((await publish('tooler', a, tools('a4', 'a5', 'a6'))).status).toBe(204);
    expect((await publish('tooler', a, [])).status).toBe(204);
    expect((await publish('tooler', c, tools('c1'))).status).toBe(204);
    expect(await toolIds(p)).toEqual([`${p}_b1`, `${p}_b2`, `${p}_c1`]);

    const big = (id: string) => [{ id: `${p}_${id}`, input_schema: { type: 'object', description: 'd'.repeat(60 * 1024) } }];
    expect((await publish('heavy', uniqueName('h'), big('h1'))).status).toBe(204);
    const heavy = await publish('heavy', uniqueName('h'), big('h2'));
    expect(heavy.status).toBe(409);
    expect(heavy.body['error']).toMatch(/^quota exceeded: client "heavy" would have \d+ bytes of published tool schemas across its runners, over the 102400 it may have \(kernel\.max_tool_bytes_per_client\)/);
  });

  it('drops the schemas of a runner that published but has had no stream for 10 minutes, once the watcher sweeps; a connected runner keeps its own', async () => {
    const p = uniqueName('idle');
    const [silent, connected] = [uniqueName('silent'), uniqueName('connected')];
    expect((await publish(undefined, silent, [{ id: `${p}_silent` }])).status).toBe(204);
    expect((await publish(undefined, connected, [{ id: `${p}_connected` }])).status).toBe(204);
    await server.connectRunner(connected, []);
    expect(await toolIds(p)).toEqual([`${p}_connected`, `${p}_silent`]);

    clock += 9 * MINUTE;
    await server.kernel.reaper.sweep();
    expect(await toolIds(p)).toEqual([`${p}_connected`, `${p}_silent`]);
    clock += 2 * MINUTE;
    expect(await toolIds(p)).toEqual([`${p}_connected`, `${p}_silent`]);
    await server.kernel.reaper.sweep();
    expect(await toolIds(p)).toEqual([`${p}_connected`]);
    // Its record stays, still its client's, until the retention time.
    expect((await server.request('DELETE', `/v0/runners/${silent}`)).status).toBe(200);
  });

  it('deletes an execution ended 31 days ago, with its events and labels, at the next sweep; keeps one ended 29 days ago and one not ended', async () => {
    const batch = uniqueName('batch');
    const made = async (): Promise<string> => (await server.post('/v0/executions', { agent_id: uniqueName('agent'), labels: { batch }, input: { big: 'x'.repeat(1000) } })).body['id'] as string;
    const old = await made();
    expect((await server.post(`/v0/executions/${old}/cancel`, {})).status).toBe(200);
    clock += 2 * DAY;
    const recent = await made();
    expect((await server.post(`/v0/executions/${recent}/cancel`, {})).status).toBe(200);
    const live = await made();
    clock += 29 * DAY + MINUTE;

    expect((await server.get(`/v0/executions/${old}`)).status).toBe(200);
    await server.kernel.reaper.sweep();
    expect(await server.get(`/v0/executions/${old}`)).toEqual({ status: 404, body: { error: `not found: execution ${old}`, code: 'NOT_FOUND' } });
    expect(await server.kernel.executions.events(old, 0, 100)).toEqual([]);
    expect((await server.get(`/v0/executions/${recent}`)).body['status']).toBe('cancelled');
    expect((await server.events(recent)).map((e) => e.type)).toEqual(['execution.created', 'execution.cancelled']);
    expect(await server.status(live)).toBe('pending');
    const listed = (await server.get(`/v0/executions?label=batch:${batch}`)).body['executions'] as { id: string }[];
    expect(listed.map((e) => e.id).sort()).toEqual([recent, live].sort());
  });

  it('answers GET /v0/tools a bounded page at a time, with a Link to the next page', async () => {
    const p = uniqueName('page');
    expect((await publish('pager', uniqueName('pr'), ['e', 'c', 'a', 'd', 'b'].map((n) => ({ id: `${p}_${n}` })))).status).toBe(204);
    const pages: string[][] = [];
    let next: string | undefined = `/v0/tools?prefix=${p}&limit=2`;
    while (next !== undefined) {
      const res = await fetch(`${server.url}${next}`, { headers: { authorization: `Bearer ${server.token as string}` } });
      expect(res.status).toBe(200);
      pages.push(((await res.json()) as { id: string }[]).map((t) => t.id));
      next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
      expect(pages.length).toBeLessThan(5);
    }
    expect(pages).toEqual([[`${p}_a`, `${p}_b`], [`${p}_c`, `${p}_d`], [`${p}_e`]]);
  });

  it("shows the kernel database's size in /metrics, as a Prometheus gauge and in the JSON", async () => {
    const text = await (await fetch(`${server.url}/metrics`, { headers: { accept: 'text/plain', authorization: `Bearer ${server.token as string}` } })).text();
    expect(text).toContain('# TYPE kiwi_kernel_database_bytes gauge\n');
    const bytes = Number(/^kiwi_kernel_database_bytes (\d+)$/m.exec(text)?.[1]);
    expect(bytes).toBeGreaterThan(1024 * 1024);
    const json = (await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.token as string}` } })).json()) as { uptime_s: number; kernel: { database_bytes: number } };
    expect(json.uptime_s).toBe(1);
    expect(json.kernel.database_bytes).toBeGreaterThan(1024 * 1024);
  });
});

describe('an embedded kernel database (PGlite) stays small, and one sweep and one page bounded', () => {
  // One database for both, a copy of the run's migrated one (a new one costs PGlite's initdb).
  let dir: ReturnType<typeof embeddedKernelRoot> | undefined;
  let db: SqlDb;
  beforeAll(async () => {
    dir = embeddedKernelRoot('kiwi-kernel-bounds-');
    db = await openPgliteDb(path.join(dir.root, KERNEL_STATE_DIR));
    await migrate(db, KERNEL_MIGRATIONS); // nothing to do on the copy; without the global setup, all of it
  }, 30_000);
  afterAll(async () => {
    await db?.close();
    dir?.remove();
  });

  it("holds only the kernel's database: initdb's template0 and template1 were dropped when it was made", async () => {
    expect(await db.query('select datname from pg_database')).toEqual([{ datname: 'postgres' }]);
  });

  it('deletes ended executions in batches: at most batchSize x maxBatches a sweep, the rest at the next', async () => {
    const at = Date.parse('2026-01-01T00:00:00.000Z');
    const executions = createExecutions(db, { now: () => new Date(at) });
    for (let i = 0; i < 5; i++) await executions.cancel((await executions.create({ client: 'c', agentId: 'a', input: null, labels: { i: String(i) } })).execution.id);
    const retention = createRetention({ db, limits: { idleRunnerSchemasMs: MINUTE, retentionMs: DAY }, connectedRunners: () => [], batchSize: 2, maxBatches: 2 });
    const later = new Date(at + DAY + 1);
    expect((await retention.sweep(later)).executions).toBe(4);
    expect((await retention.sweep(later)).executions).toBe(1);
    expect((await retention.sweep(later)).executions).toBe(0);
    expect(await db.query('select count(*)::integer as n from kernel_execution_labels')).toEqual([{ n: 0 }]);
    expect(await db.query('select count(*)::integer as n from kernel_events')).toEqual([{ n: 0 }]);
  });

  it('lists executions without reading their inputs: a page of 20 with 200 KB inputs reads a few KB from the database', async () => {
    let read = 0;
    const counting: SqlDb = { ...db, query: async (sql, params) => {
      const rows = await db.query(sql, params);
      read += Buffer.byteLength(JSON.stringify(rows), 'utf8');
      return rows;
    } } as SqlDb;
    const executions = createExecutions(counting, { limits: { ...DEFAULT_KERNEL_LIMITS, maxInputBytesPerClient: 64 * 1024 * 1024 } });
    for (let i = 0; i < 20; i++) await executions.create({ client: 'lister', agentId: 'a', input: 'x'.repeat(200_000), labels: { i: String(i) } });
    read = 0;
    const page = await executions.list({ scope: { all: false, client: 'lister', agents: [] }, limit: 50 });
    expect(page.executions).toHaveLength(20);
    expect(page.executions.every((e) => !('input' in e) && !('output' in e))).toBe(true);
    expect(read).toBeLessThan(20 * 1024);
  });

  it('ends a page of executions before its labels pass 1 MiB, and the pages together list each once', async () => {
    const executions = createExecutions(db);
    const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`key${i}`, 'v'.repeat(256)]));
    const made: string[] = [];
    for (let i = 0; i < 80; i++) made.push((await executions.create({ client: 'labelled', agentId: 'a', input: null, labels })).execution.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await executions.list({ scope: { all: false, client: 'labelled', agents: [] }, limit: 200, ...(cursor === undefined ? {} : { cursor }) });
      expect(Buffer.byteLength(JSON.stringify(page.executions.map((e) => e.labels)), 'utf8')).toBeLessThanOrEqual(LIST_PAGE_LABEL_BYTES);
      seen.push(...page.executions.map((e) => e.id));
      cursor = page.nextCursor === '' ? undefined : page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(2);
    expect(seen).toEqual([...made].reverse());
  });

  it('ends a page of tools before its schemas pass 4 MiB, and the pages together list every tool once', async () => {
    const schemas = createToolSchemas(db, () => new Date(), { maxRunnersPerClient: 10, maxToolsPerClient: 1000, maxToolBytesPerClient: 64 * 1024 * 1024 });
    const tools = Array.from({ length: 70 }, (_, i) => ({ id: `t${String(i).padStart(2, '0')}`, description: '', inputSchema: { description: 'd'.repeat(63 * 1024) } }));
    await schemas.publish('r', 'c', tools);
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = await schemas.list(after === undefined ? {} : { after });
      const bytes = page.tools.reduce((sum, t) => sum + t.id.length + JSON.stringify(t.inputSchema).length, 0);
      expect(bytes).toBeLessThanOrEqual(TOOLS_PAGE_MAX_BYTES);
      seen.push(...page.tools.map((t) => t.id));
      after = page.next;
      pages++;
    } while (after !== undefined);
    expect(pages).toBe(2);
    expect(seen).toEqual(tools.map((t) => t.id));
  });
});

describe('the gateway config', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-kernel-bounds-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const load = (yaml: string) => {
    const file = path.join(dir, 'gateway.yaml');
    writeFileSync(file, yaml);
    return loadGatewayConfig(file, { env: {}, root: dir });
  };

  it('sets the kernel limits under kernel:, each absent one at its default, and refuses one out of range', async () => {
    expect((await load('')).kernelLimits).toEqual(DEFAULT_KERNEL_LIMITS);
    expect((await load('kernel: { retention_days: 7, max_live_executions_per_client: 5, max_executions_per_client: 50, max_input_bytes_per_client: 1048576, idle_runner_schemas_ms: 120000 }\n')).kernelLimits).toEqual({
      ...DEFAULT_KERNEL_LIMITS,
      retentionMs: 7 * DAY,
      maxLiveExecutionsPerClient: 5,
      maxExecutionsPerClient: 50,
      maxInputBytesPerClient: 1024 * 1024,
      idleRunnerSchemasMs: 120_000,
    });
    await expect(load('kernel: { idle_runner_schemas_ms: 1000 }\n')).rejects.toThrow(/kernel\.idle_runner_schemas_ms: must be at least 60000/);
    await expect(load('kernel: { retention: 7 }\n')).rejects.toThrow(/unknown field/);
  });
});
