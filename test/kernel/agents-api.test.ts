import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../src/http/app.js';
import { listen, type Listener } from '../../src/http/listen.js';
import type { Kernel } from '../../src/kernel/open-kernel.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { openSse, type SseClient } from '../fixtures/kernel/sse-client.js';
import { executeScript, scriptedLoop } from '../fixtures/http-edges/scripted-loop.js';

/**
 * Agents on the kernel (V0-API.md §6, §8, §9, §10), as an agent written against the spec sees
 * it: HTTP and SSE on 127.0.0.1 only, on both backends. The conformance checklist (§18) is
 * conformance.test.ts; these are the edges around its items 7–11, 23, 24 and 30.
 */

describe.each(kernelBackends())('on %s', (_backend, open) => {
  let kernel: Kernel;
  let stop: () => Promise<void> = async () => undefined;
  let server: Listener;
  const streams: SseClient[] = [];

  beforeAll(async () => {
    ({ kernel, stop } = await open());
    const app = createGatewayApp({ runLoop: scriptedLoop(executeScript).runLoop, models: () => [], health: () => ({}), kernel: async () => kernel });
    server = await listen((request, env) => app.fetch(request, env), { host: '127.0.0.1', port: 0 });
  }, 60_000);
  afterAll(async () => {
    for (const s of streams) s.close();
    await server?.close(100);
    await kernel?.close();
    await stop();
  });

  const post = async (path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const create = async (agentId: string, input: unknown = null): Promise<Record<string, unknown>> => (await post('/v0/executions', { agent_id: agentId, input })).body;
  const get = async (id: string): Promise<Record<string, unknown>> => (await (await fetch(`${server.url}/v0/executions/${id}`)).json()) as Record<string, unknown>;
  const types = async (id: string): Promise<string[]> =>
    ((await (await fetch(`${server.url}/v0/executions/${id}/events`)).json()) as { events: { type: string }[] }).events.map((e) => e.type);
  const connect = async (agentId: string, consumerId: string): Promise<SseClient> => {
    const s = await openSse(`${server.url}/v0/agents/stream?agent_id=${agentId}&consumer_id=${consumerId}`);
    streams.push(s);
    return s;
  };
  const intent = (executionId: unknown, sessionId: unknown, body: unknown) => post('/v0/agents/intent', { execution_id: executionId, session_id: sessionId, intent: body });

  it('assigns pending executions to an agent that connects, and new ones at once; complete ends one with its output', async () => {
    const agent = `writer-${Date.now()}`;
    const waiting = await create(agent, { q: 'x' });
    expect(waiting['status']).toBe('pending');
    const stream = await connect(agent, `${agent}-c1`);
    expect(stream.status).toBe(200);
    const first = await stream.next('execution.assigned');
    expect(first.data).toMatchObject({ execution_id: waiting['id'], agent_id: agent, input: { q: 'x' } });
    const session = (first.data as { session_id: string }).session_id;
    expect(await get(waiting['id'] as string)).toMatchObject({ status: 'running' });

    const later = await create(agent, 'plain');
    expect(later['status']).toBe('running');
    expect((await stream.next('execution.assigned')).data).toMatchObject({ execution_id: later['id'], input: 'plain' });

    const done = await intent(waiting['id'], session, { type: 'complete', output: { answer: 42 } });
    expect(done).toEqual({ status: 200, body: { accepted: true } });
    expect(await get(waiting['id'] as string)).toMatchObject({ status: 'completed', output: { answer: 42 } });
    expect(await types(waiting['id'] as string)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'execution.completed']);
    const again = await intent(waiting['id'], session, { type: 'complete' });
    expect(again.status).toBe(409);
  });

  it('fail ends an execution with the error; a fail without an error, or an unknown type, is a 400', async () => {
    const agent = `failer-${Date.now()}`;
    const stream = await connect(agent, `${agent}-c1`);
    const e = await create(agent);
    const { session_id: session } = (await stream.next('execution.assigned')).data as { session_id: string };
    expect((await intent(e['id'], session, { type: 'fail' })).body).toEqual({ error: 'intent.error is required for fail', code: 'VALIDATION_ERROR' });
    expect((await intent(e['id'], session, { type: 'dance' })).body).toMatchObject({ error: 'unknown intent type dance', code: 'VALIDATION_ERROR' });
    expect((await intent(e['id'], session, { type: 'fail', error: 'boom' })).status).toBe(200);
    expect(await get(e['id'] as string)).toMatchObject({ status: 'failed' });
    const log = (await (await fetch(`${server.url}/v0/executions/${e['id'] as string}/events`)).json()) as { events: { type: string; payload: unknown }[] };
    expect(log.events.at(-1)).toMatchObject({ type: 'execution.failed', payload: { error: 'boom' } });
  });

  it('puts a running execution back to pending when its agent goes, and assigns it again with a new session', async () => {
    const agent = `leaver-${Date.now()}`;
    const first = await connect(agent, `${agent}-c1`);
    const e = await create(agent);
    const { session_id: oldSession } = (await first.next('execution.assigned')).data as { session_id: string };
    first.close();
    await expect.poll(async () => (await get(e['id'] as string))['status']).toBe('pending');
    expect(await types(e['id'] as string)).toEqual(['execution.created', 'execution.started', 'agent.timeout', 'execution.reset']);
    const back = await connect(agent, `${agent}-c1`);
    const { session_id: newSession } = (await back.next('execution.assigned')).data as { session_id: string };
    expect(newSession).not.toBe(oldSession);
    const stale = await intent(e['id'], oldSession, { type: 'complete' });
    expect(stale).toEqual({ status: 401, body: { error: `session not found: session ${oldSession}`, code: 'UNAUTHORIZED' } });
    const other = await create(agent);
    const { session_id: otherSession } = (await back.next('execution.assigned')).data as { session_id: string };
    expect((await intent(e['id'], otherSession, { type: 'complete' })).status).toBe(400);
    expect((await intent(other['id'], otherSession, { type: 'complete' })).status).toBe(200);
  });

  it("streams an execution's events: the stored ones, then new ones, ending after the last; from after_sequence; at once when it already ended", async () => {
    const agent = `watched-${Date.now()}`;
    const e = await create(agent, { q: 1 });
    const id = e['id'] as string;
    const watch = await openSse(`${server.url}/v0/executions/${id}/stream`);
    streams.push(watch);
    const created = await watch.next('execution.created');
    expect(created).toMatchObject({ id: '1', data: { sequence: 1, type: 'execution.created', execution_id: id } });
    const agentStream = await connect(agent, `${agent}-c`);
    const { session_id: session } = (await agentStream.next('execution.assigned')).data as { session_id: string };
    expect((await watch.next('execution.started')).id).toBe('2');
    await intent(id, session, { type: 'complete', output: 'ok' });
    expect((await watch.next('execution.completed')).data).toMatchObject({ sequence: 4, payload: { output: 'ok' } });
    await watch.ended;

    const late = await openSse(`${server.url}/v0/executions/${id}/stream?after_sequence=2`);
    streams.push(late);
    expect((await late.next('intent.accepted')).id).toBe('3');
    await late.ended;
    const past = await openSse(`${server.url}/v0/executions/${id}/stream?after_sequence=4`);
    streams.push(past);
    await past.ended;
    const resumed = await openSse(`${server.url}/v0/executions/${id}/stream`, { 'last-event-id': '3' });
    streams.push(resumed);
    expect((await resumed.next('execution.completed')).id).toBe('4');
    const unknown = await fetch(`${server.url}/v0/executions/nope/stream`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'not found: execution nope', code: 'NOT_FOUND' });
  });

  it('sends retry and heartbeats on the stream', async () => {
    const s = await connect(`beat-${Date.now()}`, 'c');
    expect(s.status).toBe(200);
    // The heartbeat comes every 5 s; the first frame (retry) is there at once.
    await expect.poll(() => s.comments.length, { timeout: 7_000, interval: 200 }).toBeGreaterThan(0);
    expect(s.comments).toContain('heartbeat');
  }, 10_000);
});
