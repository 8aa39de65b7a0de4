import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { useKernelServer } from '../fixtures/kernel/kernel-server.js';

/**
 * Agents on the kernel (V0-API.md §6, §8, §9, §10), as an agent written against the spec sees
 * it: HTTP and SSE on 127.0.0.1 only, on both backends. The conformance checklist (§18) is
 * conformance.int.test.ts; these are the edges around its items 7–11, 23, 24 and 30.
 */

describe.each(kernelBackends())('on %s', (_backend, open) => {
  const server = useKernelServer(open);
  const create = async (agentId: string, input: unknown = null): Promise<Record<string, unknown>> => (await server.post('/v0/executions', { agent_id: agentId, input })).body;
  const get = async (id: string): Promise<Record<string, unknown>> => (await server.get(`/v0/executions/${id}`)).body;
  const types = async (id: string): Promise<string[]> => (await server.events(id)).map((e) => e.type);
  const intent = (executionId: unknown, sessionId: unknown, body: unknown) => server.post('/v0/agents/intent', { execution_id: executionId, session_id: sessionId, intent: body });

  it('assigns pending executions to an agent that connects, and new ones at once; complete ends one with its output', async () => {
    const agent = `writer-${Date.now()}`;
    const waiting = await create(agent, { q: 'x' });
    expect(waiting['status']).toBe('pending');
    const stream = await server.connectAgent(agent, `${agent}-c1`);
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
    const stream = await server.connectAgent(agent, `${agent}-c1`);
    const e = await create(agent);
    const { session_id: session } = (await stream.next('execution.assigned')).data as { session_id: string };
    expect((await intent(e['id'], session, { type: 'fail' })).body).toEqual({ error: 'intent.error is required for fail', code: 'VALIDATION_ERROR' });
    expect((await intent(e['id'], session, { type: 'dance' })).body).toMatchObject({ error: 'unknown intent type dance', code: 'VALIDATION_ERROR' });
    expect((await intent(e['id'], session, { type: 'fail', error: 'boom' })).status).toBe(200);
    expect(await get(e['id'] as string)).toMatchObject({ status: 'failed' });
    expect((await server.events(e['id'] as string)).at(-1)).toMatchObject({ type: 'execution.failed', payload: { error: 'boom' } });
  });

  it('puts a running execution back to pending when its agent goes, and assigns it again with a new session', async () => {
    const agent = `leaver-${Date.now()}`;
    const first = await server.connectAgent(agent, `${agent}-c1`);
    const e = await create(agent);
    const { session_id: oldSession } = (await first.next('execution.assigned')).data as { session_id: string };
    first.close();
    await expect.poll(async () => (await get(e['id'] as string))['status']).toBe('pending');
    expect(await types(e['id'] as string)).toEqual(['execution.created', 'execution.started', 'agent.timeout', 'execution.reset']);
    const back = await server.connectAgent(agent, `${agent}-c1`);
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
    const watch = await server.sse(`/v0/executions/${id}/stream`);
    const created = await watch.next('execution.created');
    expect(created).toMatchObject({ id: '1', data: { sequence: 1, type: 'execution.created', execution_id: id } });
    const agentStream = await server.connectAgent(agent, `${agent}-c`);
    const { session_id: session } = (await agentStream.next('execution.assigned')).data as { session_id: string };
    expect((await watch.next('execution.started')).id).toBe('2');
    await intent(id, session, { type: 'complete', output: 'ok' });
    expect((await watch.next('execution.completed')).data).toMatchObject({ sequence: 4, payload: { output: 'ok' } });
    await watch.ended;

    const late = await server.sse(`/v0/executions/${id}/stream?after_sequence=2`);
    expect((await late.next('intent.accepted')).id).toBe('3');
    await late.ended;
    const past = await server.sse(`/v0/executions/${id}/stream?after_sequence=4`);
    await past.ended;
    const resumed = await server.sse(`/v0/executions/${id}/stream`, { 'last-event-id': '3' });
    expect((await resumed.next('execution.completed')).id).toBe('4');
    expect(await server.get('/v0/executions/nope/stream')).toEqual({ status: 404, body: { error: 'not found: execution nope', code: 'NOT_FOUND' } });
  });

  it('sends retry and heartbeats on the stream', async () => {
    // The stream's heartbeat timer (setInterval, every 5 s) runs on a clock the test moves, so
    // the 5 s are not waited for; everything else (HTTP, the database) keeps real time.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    onTestFinished(() => void vi.useRealTimers());
    const s = await server.connectAgent(`beat-${Date.now()}`, 'c');
    expect(s.status).toBe(200);
    // The heartbeat comes every 5 s; the first frame (retry) is there at once.
    vi.advanceTimersByTime(5_000);
    await expect.poll(() => s.comments.length, { timeout: 7_000, interval: 20 }).toBeGreaterThan(0);
    expect(s.comments).toContain('heartbeat');
  }, 10_000);
});
