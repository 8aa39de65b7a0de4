import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../src/http/app.js';
import { listen, type Listener } from '../../src/http/listen.js';
import type { Kernel } from '../../src/kernel/open-kernel.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { openSse, type SseClient } from '../fixtures/kernel/sse-client.js';
import { executeScript, scriptedLoop } from '../fixtures/http-edges/scripted-loop.js';

/**
 * Tool calls an agent runs itself (V0-API.md §6.2, §6.3, §9, §11) as a spec-only HTTP/SSE agent
 * sees them, on both backends. The conformance checklist (§18) is conformance.test.ts; these are
 * the edges around its items 12, 22, 23 and 28.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-kernel-policy-'));
const policyFile = path.join(dir, 'kernel-policy.yaml');
writeFileSync(
  policyFile,
  `rules:
  - id: read-ok
    priority: 10
    when: { tool_ids: ["read_*", "fail_*"] }
    then: { decision: allow }
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(kernelBackends({ policyFile }))('on %s', (_backend, open) => {
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

  const post = async (p: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${server.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const events = async (id: string) => ((await (await fetch(`${server.url}/v0/executions/${id}/events`)).json()) as { events: { type: string; step_id?: string; payload: Record<string, unknown> }[] }).events;

  /** A connected agent with one execution assigned to it. */
  async function started(agent = `agent-${Math.random().toString(36).slice(2)}`): Promise<{ agent: string; stream: SseClient; id: string; session: string; invoke(tool: string, args?: unknown): ReturnType<typeof post> }> {
    const stream = await openSse(`${server.url}/v0/agents/stream?agent_id=${agent}&consumer_id=${agent}-c`);
    streams.push(stream);
    const id = (await post('/v0/executions', { agent_id: agent })).body['id'] as string;
    const session = ((await stream.next('execution.assigned')).data as { session_id: string }).session_id;
    const invoke = (tool: string, args?: unknown) => post('/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'invoke_tool', tool_id: tool, arguments: args, idempotency_key: `${id}:${tool}:1a2b3c4d` } });
    return { agent, stream, id, session, invoke };
  }

  it('runs a local tool: a step, its result, tool.result to the agent, then complete', async () => {
    const a = await started();
    const invoked = await a.invoke('read_file', { path: 'README.md' });
    expect(invoked.status).toBe(200);
    expect(invoked.body).toEqual({ accepted: true, step_id: expect.any(String) });
    const stepId = invoked.body['step_id'] as string;
    const reported = await post('/v0/agents/step-result', { execution_id: a.id, session_id: a.session, step_id: stepId, success: true, data: { text: '# Kiwi' } });
    expect(reported).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'succeeded', result: { text: '# Kiwi' } });
    expect((await post('/v0/agents/intent', { execution_id: a.id, session_id: a.session, intent: { type: 'complete', output: 'done' } })).status).toBe(200);
    const log = await events(a.id);
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.completed', 'intent.accepted', 'execution.completed']);
    expect(log[3]).toMatchObject({ step_id: stepId, payload: { tool_id: 'read_file', tool_version: 0, arguments: { path: 'README.md' }, max_attempts: 1, attempt: 1 } });
    expect(log[2]?.payload).toEqual({ intent_type: 'invoke_tool', details: { tool_id: 'read_file', arguments: { path: 'README.md' }, idempotency_key: `${a.id}:read_file:1a2b3c4d` } });
    expect(log[4]?.payload).toEqual({ result: { text: '# Kiwi' } });
  });

  it('a failing tool is step.failed, not retried, and tool.result says failed; its result cannot be reported twice', async () => {
    const a = await started();
    const stepId = (await a.invoke('fail_always')).body['step_id'] as string;
    await post('/v0/agents/step-result', { execution_id: a.id, session_id: a.session, step_id: stepId, success: false, error: 'disk on fire' });
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'failed', error: 'disk on fire' });
    expect((await events(a.id)).at(-1)).toMatchObject({ type: 'step.failed', payload: { error: 'disk on fire', retryable: false } });
    const twice = await post('/v0/agents/step-result', { execution_id: a.id, session_id: a.session, step_id: stepId, success: true });
    expect(twice).toEqual({ status: 409, body: { error: 'step already resolved', code: 'CONFLICT' } });
    expect((await post('/v0/agents/step-result', { execution_id: a.id, session_id: a.session, step_id: 'nope', success: true })).body).toEqual({ error: 'not found: step nope', code: 'NOT_FOUND' });
    expect((await post('/v0/agents/step-result', { execution_id: a.id, session_id: a.session })).body).toEqual({ error: 'execution_id, session_id, and step_id are required', code: 'VALIDATION_ERROR' });
  });

  it('refuses to complete with a step open (409), keeping the intent.accepted', async () => {
    const a = await started();
    await a.invoke('read_file');
    const refused = await post('/v0/agents/intent', { execution_id: a.id, session_id: a.session, intent: { type: 'complete' } });
    expect(refused).toEqual({ status: 409, body: { error: 'conflict: cannot complete with active steps in progress', code: 'CONFLICT' } });
    expect((await events(a.id)).at(-1)).toMatchObject({ type: 'intent.accepted', payload: { intent_type: 'complete' } });
  });

  it('cancels the open steps of an agent that goes, and hands the finished ones back as history on reassignment', async () => {
    const a = await started();
    const done = (await a.invoke('read_file', { path: 'a' })).body['step_id'] as string;
    await post('/v0/agents/step-result', { execution_id: a.id, session_id: a.session, step_id: done, success: true, data: 'A' });
    const open = (await a.invoke('read_file', { path: 'b' })).body['step_id'] as string;
    a.stream.close();
    await expect.poll(async () => (await events(a.id)).map((e) => e.type).includes('execution.reset')).toBe(true);
    const log = await events(a.id);
    expect(log.find((e) => e.type === 'step.cancelled')).toMatchObject({ step_id: open, payload: { reason: 'agent disconnected' } });
    const back = await openSse(`${server.url}/v0/agents/stream?agent_id=${a.agent}&consumer_id=${a.agent}-c`);
    streams.push(back);
    const assigned = (await back.next('execution.assigned')).data as { history: Record<string, unknown>[] };
    expect(assigned.history.map((h) => [h['step_id'], h['status']])).toEqual([
      [done, 'succeeded'],
      [open, 'cancelled'],
    ]);
    expect(assigned.history[0]).toMatchObject({ tool_id: 'read_file', arguments: { path: 'a' }, result: 'A' });
    expect(assigned.history[1]).toMatchObject({ error: 'agent disconnected' });
  });
});
