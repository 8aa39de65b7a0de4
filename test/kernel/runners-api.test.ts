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
 * Remote tools on runners (V0-API.md §7, §11.2, §13) as spec-only HTTP/SSE agents and runners see
 * them, on both backends. The conformance checklist (§18) is conformance.test.ts; these are the
 * edges around its items 18, 22 and 32. The queue is scanned by the test
 * (`runners.dispatchQueued()`) on a clock it moves, instead of every second.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-kernel-runners-'));
const policyFile = path.join(dir, 'kernel-policy.yaml');
writeFileSync(policyFile, 'rules:\n  - { id: ask, priority: 1, when: { tool_id: deploy }, then: { decision: require_approval } }\n  - { id: all, priority: 2, then: { decision: allow } }\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let clock = Date.parse('2026-11-23T10:00:00.000Z');
const now = (): Date => new Date(clock);

describe.each(kernelBackends({ policyFile, now, reaperIntervalMs: 0, queueIntervalMs: 0 }))('on %s', (_backend, open) => {
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
  const log = async (id: string) => ((await (await fetch(`${server.url}/v0/executions/${id}/events`)).json()) as { events: { type: string; step_id?: string; payload: Record<string, unknown> }[] }).events;
  const sse = async (url: string) => {
    const s = await openSse(`${server.url}${url}`);
    streams.push(s);
    return s;
  };
  const tag = (): string => Math.random().toString(36).slice(2, 8);

  async function started() {
    const agent = `agent-${tag()}`;
    const stream = await sse(`/v0/agents/stream?agent_id=${agent}&consumer_id=${agent}-c`);
    const id = (await post('/v0/executions', { agent_id: agent })).body['id'] as string;
    const session = ((await stream.next('execution.assigned')).data as { session_id: string }).session_id;
    const invoke = (tool: string, args: unknown = { q: 'x' }) => post('/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'invoke_tool', tool_id: tool, arguments: args, remote: true } });
    return { stream, id, session, invoke };
  }

  type Job = { id: string; execution_id: string; step_id: string; attempt: number; tool_id: string; arguments: unknown; deadline: string };
  const report = (runner: string, job: Job, outcome: Record<string, unknown>) => post(`/v0/runners/${runner}/results`, { job_id: job.id, execution_id: job.execution_id, step_id: job.step_id, ...outcome });

  it('sends a remote call to a runner that has the tool, and its result back to the agent', async () => {
    const tool = `search_${tag()}`;
    const runner = await sse(`/v0/runners/stream?runner_id=r1&consumer_id=r1-${tag()}&capabilities=${tool},other`);
    const a = await started();
    const stepId = (await a.invoke(tool)).body['step_id'] as string;
    const job = (await runner.next('job.assigned')).data as Job;
    expect(job).toMatchObject({ execution_id: a.id, step_id: stepId, attempt: 1, tool_id: tool, tool_version: 0, arguments: { q: 'x' }, not_before: '0001-01-01T00:00:00Z' });
    expect((await post(`/v0/runners/steps/${stepId}/started`, { execution_id: a.id, runner_id: 'r1' })).body).toEqual({ status: 'ok' });
    expect((await report('r1', job, { success: true, data: { hits: 3 } })).body).toEqual({ status: 'ok' });
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'succeeded', result: { hits: 3 } });
    const events = (await log(a.id)).filter((e) => e.step_id === stepId);
    expect(events.map((e) => e.type)).toEqual(['step.created', 'step.dispatched', 'step.started', 'step.completed']);
    expect(events[0]?.payload).toMatchObject({ max_attempts: 3, attempt: 1 });
    expect(events[1]?.payload).toMatchObject({ runner_id: '', job_id: job.id });
    expect((await report('r1', job, { success: true })).body).toEqual({ error: 'step already resolved', code: 'CONFLICT' });
    expect((await report('r1', { ...job, step_id: 'nope' }, { success: true })).status).toBe(404);
    expect((await post('/v0/runners/r1/results', { job_id: job.id })).body).toEqual({ error: 'job_id, execution_id, and step_id are required', code: 'VALIDATION_ERROR' });
  });

  it("routes by the capabilities a runner updates, and drops a cancelled execution's queued job", async () => {
    const runnerId = `r6-${tag()}`;
    const [t1, t2] = [`t1_${tag()}`, `t2_${tag()}`];
    const runner = await sse(`/v0/runners/stream?runner_id=${runnerId}&consumer_id=${runnerId}-c&capabilities=${t1}`);
    expect((await post(`/v0/runners/${runnerId}/capabilities`, { tools: [t2] })).body).toEqual({ status: 'ok' });
    const a = await started();
    await a.invoke(t1);
    await kernel.runners.dispatchQueued();
    await expect(runner.next('job.assigned', 300)).rejects.toThrow(/no job.assigned/);
    await post(`/v0/executions/${a.id}/cancel`, {});
    await post(`/v0/runners/${runnerId}/capabilities`, { tools: [t1, t2] });
    await expect(runner.next('job.assigned', 300)).rejects.toThrow(/no job.assigned/);
    const b = await started();
    await b.invoke(t2);
    expect(((await runner.next('job.assigned')).data as Job).tool_id).toBe(t2);
    expect((await (await fetch(`${server.url}/v0/runners/${runnerId}`, { method: 'DELETE' })).json())).toEqual({ status: 'ok' });
  });

  it("does not send a dropped runner's job again: its step waits for its deadline and fails the execution", async () => {
    const tool = `gone_${tag()}`;
    const first = await sse(`/v0/runners/stream?runner_id=r8&consumer_id=r8-${tag()}&capabilities=${tool}`);
    const a = await started();
    const stepId = (await a.invoke(tool)).body['step_id'] as string;
    await first.next('job.assigned');
    first.close();
    const second = await sse(`/v0/runners/stream?runner_id=r9&consumer_id=r9-${tag()}&capabilities=${tool}`);
    await kernel.runners.dispatchQueued();
    await expect(second.next('job.assigned', 300)).rejects.toThrow(/no job.assigned/);
    clock += 5 * 60_000 + 1;
    await kernel.reaper.sweep();
    expect((await log(a.id)).slice(-2).map((e) => [e.type, e.step_id])).toEqual([
      ['step.timed_out', stepId],
      ['execution.failed', undefined],
    ]);
  });

  it('sends an approved remote call to a runner', async () => {
    const runner = await sse(`/v0/runners/stream?runner_id=r7&consumer_id=r7-${tag()}&capabilities=deploy`);
    const a = await started();
    const stepId = (await a.invoke('deploy', { env: 'prod' })).body['step_id'] as string;
    await post(`/v0/executions/${a.id}/signal`, { signal_type: 'step.approve', payload: { step_id: stepId, approved: true } });
    const job = (await runner.next('job.assigned')).data as Job;
    expect(job).toMatchObject({ step_id: stepId, tool_id: 'deploy', arguments: { env: 'prod' } });
    await report('r7', job, { success: true, data: 'ok' });
    expect((await a.stream.next('tool.result')).data).toMatchObject({ step_id: stepId, status: 'succeeded' });
  });
});
