import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../src/http/server/app.js';
import type { Kernel } from '../../src/kernel/open-kernel.js';
import { executeScript, scriptedLoop } from '../fixtures/http-edges/scripted-loop.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';

/**
 * The kernel's executions API (V0-API.md §5, §14, §16) through the gateway's HTTP app, on both
 * backends: PGlite in memory, and a real Postgres server. The conformance checklist (§18) is
 * conformance.int.test.ts; these are the edges around its items 3–6 and 29.
 */

describe.each(kernelBackends())('on %s', (_backend, open) => {
  let kernel: Kernel;
  let stop: () => Promise<void> = async () => undefined;
  let app: ReturnType<typeof createGatewayApp>;

  beforeAll(async () => {
    ({ kernel, stop } = await open());
    app = createGatewayApp({ runLoop: scriptedLoop(executeScript).runLoop, models: () => ({ models: [] }), health: () => ({}), kernel: async () => kernel });
  }, 60_000);
  afterAll(async () => {
    await kernel?.close();
    await stop();
  });

  const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

  async function create(body: unknown): Promise<Record<string, unknown>> {
    const res = await app.request('/v0/executions', json(body));
    expect(res.status).toBe(201);
    return (await res.json()) as Record<string, unknown>;
  }

  async function refused(res: Response | Promise<Response>, status: number, code: string): Promise<string> {
    const r = await res;
    expect(r.status).toBe(status);
    const body = (await r.json()) as { error: string; code: string };
    expect(body.code).toBe(code);
    expect(Object.keys(body).sort()).toEqual(['code', 'error']);
    return body.error;
  }

  describe('creating and reading executions', () => {
    it('creates a pending execution that echoes its input and labels, as the client sent them', async () => {
      const e = await create({ agent_id: 'researcher', input: { q: 'x', nested: { zeta: 1, alpha: [true, null] } }, labels: { env: 'dev' }, unknown_field: 1 });
      expect(e).toMatchObject({ status: 'pending', agent_id: 'researcher', input: { q: 'x', nested: { zeta: 1, alpha: [true, null] } }, labels: { env: 'dev' } });
      expect(e['id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(JSON.stringify((e['input'] as { nested: object }).nested)).toBe('{"zeta":1,"alpha":[true,null]}');
      expect(e['created_at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(e).not.toHaveProperty('output');
      const got = await app.request(`/v0/executions/${e['id'] as string}`);
      expect(await got.json()).toEqual(e);
    });

    it('gives input null and labels {} when none were sent', async () => {
      expect(await create({ agent_id: 'a' })).toMatchObject({ input: null, labels: {} });
    });

    it.each([
      ['no agent_id', { input: 1 }, 'agent_id is required'],
      ['an empty agent_id', { agent_id: '' }, 'agent_id is required'],
      ['a long agent_id', { agent_id: 'x'.repeat(257) }, 'longer than 256'],
      ['a label that is not a string', { agent_id: 'a', labels: { n: 1 } }, 'label "n" must be a string'],
      ['labels that are not an object', { agent_id: 'a', labels: ['x'] }, 'labels must be an object'],
      ['a body that is not an object', [1, 2], 'must be a JSON object'],
      ['bad JSON', '{"agent_id": ', 'not valid JSON'],
    ])('refuses %s with 400 VALIDATION_ERROR', async (_name, body, message) => {
      expect(await refused(app.request('/v0/executions', json(body)), 400, 'VALIDATION_ERROR')).toContain(message);
    });

    it('refuses a body over 1 MiB with 400', async () => {
      await refused(app.request('/v0/executions', json({ agent_id: 'a', input: 'x'.repeat(1024 * 1024) })), 400, 'VALIDATION_ERROR');
    });

    it('answers an unknown id with 404 NOT_FOUND', async () => {
      expect(await refused(app.request('/v0/executions/nope'), 404, 'NOT_FOUND')).toBe('not found: execution nope');
    });
  });

  describe('listing executions', () => {
    it('filters by status, agent and labels, newest first, and pages by cursor', async () => {
      const agent = `lister-${Date.now()}`;
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push((await create({ agent_id: agent, labels: { team: i % 2 === 0 ? 'even' : 'odd', idx: String(i) } }))['id'] as string);
      const newestFirst = [...made].reverse();
      const page = async (query: string) => (await (await app.request(`/v0/executions?${query}`)).json()) as { executions: { id: string; labels: object }[]; next_cursor: string };

      const all = await page(`agent_id=${agent}&limit=50`);
      expect(all.executions.map((e) => e.id)).toEqual(newestFirst);
      expect(all.next_cursor).toBe('');
      expect(all.executions[0]).not.toHaveProperty('input');

      const even = await page(`agent_id=${agent}&label=team:even`);
      expect(even.executions.map((e) => e.id)).toEqual([made[4], made[2], made[0]]);
      expect((await page(`agent_id=${agent}&label=team:even&label=idx:2`)).executions.map((e) => e.id)).toEqual([made[2]]);

      const first = await page(`agent_id=${agent}&limit=2`);
      expect(first.executions.map((e) => e.id)).toEqual(newestFirst.slice(0, 2));
      const second = await page(`agent_id=${agent}&limit=2&cursor=${first.next_cursor}`);
      expect(second.executions.map((e) => e.id)).toEqual(newestFirst.slice(2, 4));
      const third = await page(`agent_id=${agent}&limit=2&cursor=${second.next_cursor}`);
      expect(third.executions.map((e) => e.id)).toEqual(newestFirst.slice(4));
      expect(third.next_cursor).toBe('');

      await app.request(`/v0/executions/${made[1] as string}/cancel`, { method: 'POST' });
      expect((await page(`agent_id=${agent}&status=cancelled`)).executions.map((e) => e.id)).toEqual([made[1]]);
      expect((await page(`agent_id=${agent}&status=pending`)).executions).toHaveLength(4);
    });

    it('clamps limit, and refuses a bad status, label filter or cursor with 400', async () => {
      expect(await refused(app.request('/v0/executions?status=done'), 400, 'VALIDATION_ERROR')).toContain('invalid status "done"');
      expect(await refused(app.request('/v0/executions?label=nocolon'), 400, 'VALIDATION_ERROR')).toContain('key:value');
      expect(await refused(app.request('/v0/executions?label=:x'), 400, 'VALIDATION_ERROR')).toContain('key:value');
      expect(await refused(app.request('/v0/executions?cursor=garbage'), 400, 'VALIDATION_ERROR')).toContain('invalid cursor');
      expect((await app.request('/v0/executions?limit=abc')).status).toBe(200);
    });
  });

  describe('cancelling', () => {
    it('cancels a pending execution with an execution.cancelled event, and refuses a second cancel with 409', async () => {
      const e = await create({ agent_id: 'c' });
      const res = await app.request(`/v0/executions/${e['id'] as string}/cancel`, { method: 'POST' });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id: e['id'], status: 'cancelled' });
      const again = await refused(app.request(`/v0/executions/${e['id'] as string}/cancel`, { method: 'POST' }), 409, 'CONFLICT');
      expect(again).toContain('execution is in terminal state');
      await refused(app.request('/v0/executions/nope/cancel', { method: 'POST' }), 404, 'NOT_FOUND');
    });
  });

  describe('the event log', () => {
    it('numbers events from 1 without gaps, pages by after_sequence and limit, and is empty for an unknown id', async () => {
      const e = await create({ agent_id: 'ev', input: { k: 1 }, labels: { env: 'dev' } });
      const id = e['id'] as string;
      await app.request(`/v0/executions/${id}/cancel`, { method: 'POST' });
      const log = (await (await app.request(`/v0/executions/${id}/events?after_sequence=0&limit=100`)).json()) as { events: Record<string, unknown>[]; latest_sequence: number };
      expect(log.events.map((x) => [x['sequence'], x['type']])).toEqual([
        [1, 'execution.created'],
        [2, 'execution.cancelled'],
      ]);
      expect(log.latest_sequence).toBe(2);
      expect(log.events[0]).toMatchObject({ execution_id: id, schema_version: 1, idempotency_key: '', payload: { agent_id: 'ev', input: { k: 1 }, labels: { env: 'dev' } } });
      expect(log.events[0]).not.toHaveProperty('step_id');
      expect(log.events[0]?.['causation_id']).toBe(log.events[0]?.['id']);
      expect(log.events[1]?.['payload']).toEqual({ reason: 'cancelled by request' });
      const rest = (await (await app.request(`/v0/executions/${id}/events?after_sequence=1&limit=1`)).json()) as { events: { sequence: number }[]; latest_sequence: number };
      expect(rest.events.map((x) => x.sequence)).toEqual([2]);
      expect(rest.latest_sequence).toBe(2);
      expect(await (await app.request(`/v0/executions/${id}/events?after_sequence=2`)).json()).toEqual({ events: [], latest_sequence: 0 });
      expect(await (await app.request('/v0/executions/nope/events')).json()).toEqual({ events: [], latest_sequence: 0 });
    });
  });

  describe('the routes', () => {
    it('answers a wrong method with 405 and Allow', async () => {
      const res = await app.request('/v0/executions', { method: 'DELETE' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, POST');
    });
  });
});
