import { describe, expect, it } from 'vitest';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { useKernelServer, type StartedAgent } from '../fixtures/kernel/kernel-server.js';
import { tempPolicyFile } from '../fixtures/kernel/policy-file.js';

/**
 * Remote tools on runners (V0-API.md §7, §11.2, §13) as spec-only HTTP/SSE agents and runners see
 * them, on both backends. The conformance checklist (§18) is conformance.int.test.ts; these are the
 * edges around its items 18, 22 and 32. The queue is scanned by the test
 * (`runners.dispatchQueued()`) on a clock it moves, instead of every second.
 */

const policyFile = tempPolicyFile('runners', 'rules:\n  - { id: ask, priority: 1, when: { tool_id: deploy }, then: { decision: require_approval } }\n  - { id: all, priority: 2, then: { decision: allow } }\n');

let clock = Date.parse('2026-11-23T10:00:00.000Z');
const now = (): Date => new Date(clock);

describe.each(kernelBackends({ policyFile, now, reaperIntervalMs: 0, queueIntervalMs: 0 }))('on %s', (_backend, open) => {
  const server = useKernelServer(open);
  const tag = (): string => Math.random().toString(36).slice(2, 8);
  /** A remote call, by default with `{ q: 'x' }`, sent without an idempotency key. */
  const invoke = (a: StartedAgent, tool: string, args: unknown = { q: 'x' }) => a.intent({ type: 'invoke_tool', tool_id: tool, arguments: args, remote: true });

  it('sends a remote call to a runner that has the tool, and its result back to the agent', async () => {
    const tool = `search_${tag()}`;
    const runner = await server.connectRunner('r1', [tool, 'other']);
    const a = await server.startedAgent();
    const stepId = (await invoke(a, tool)).body['step_id'] as string;
    const job = await runner.nextJob();
    expect(job).toMatchObject({ execution_id: a.id, step_id: stepId, attempt: 1, tool_id: tool, tool_version: 0, arguments: { q: 'x' }, not_before: '0001-01-01T00:00:00Z' });
    expect((await runner.started(job)).body).toEqual({ status: 'ok' });
    expect((await runner.report(job, { success: true, data: { hits: 3 } })).body).toEqual({ status: 'ok' });
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'succeeded', result: { hits: 3 } });
    const events = (await server.events(a.id)).filter((e) => e.step_id === stepId);
    expect(events.map((e) => e.type)).toEqual(['step.created', 'step.dispatched', 'step.started', 'step.completed']);
    expect(events[0]?.payload).toMatchObject({ max_attempts: 3, attempt: 1 });
    expect(events[1]?.payload).toMatchObject({ runner_id: '', job_id: job.id });
    expect((await runner.report(job, { success: true })).body).toEqual({ error: 'step already resolved', code: 'CONFLICT' });
    expect((await runner.report({ ...job, step_id: 'nope' }, { success: true })).status).toBe(404);
    expect((await server.post('/v0/runners/r1/results', { job_id: job.id })).body).toEqual({ error: 'job_id, execution_id, and step_id are required', code: 'VALIDATION_ERROR' });
  });

  it("routes by the capabilities a runner updates, and drops a cancelled execution's queued job", async () => {
    const runnerId = `r6-${tag()}`;
    const [t1, t2] = [`t1_${tag()}`, `t2_${tag()}`];
    const runner = await server.connectRunner(runnerId, [t1]);
    expect((await server.post(`/v0/runners/${runnerId}/capabilities`, { tools: [t2] })).body).toEqual({ status: 'ok' });
    const a = await server.startedAgent();
    await invoke(a, t1);
    await server.kernel.runners.dispatchQueued();
    await expect(runner.nextJob(300)).rejects.toThrow(/no job.assigned/);
    await server.post(`/v0/executions/${a.id}/cancel`, {});
    await server.post(`/v0/runners/${runnerId}/capabilities`, { tools: [t1, t2] });
    await expect(runner.nextJob(300)).rejects.toThrow(/no job.assigned/);
    const b = await server.startedAgent();
    await invoke(b, t2);
    expect((await runner.nextJob()).tool_id).toBe(t2);
    expect((await server.request('DELETE', `/v0/runners/${runnerId}`)).body).toEqual({ status: 'ok' });
  });

  it("does not send a dropped runner's job again: its step waits for its deadline and fails the execution", async () => {
    const tool = `gone_${tag()}`;
    const first = await server.connectRunner('r8', [tool]);
    const a = await server.startedAgent();
    const stepId = (await invoke(a, tool)).body['step_id'] as string;
    await first.nextJob();
    first.stream.close();
    const second = await server.connectRunner('r9', [tool]);
    await server.kernel.runners.dispatchQueued();
    await expect(second.nextJob(300)).rejects.toThrow(/no job.assigned/);
    clock += 5 * 60_000 + 1;
    await server.kernel.reaper.sweep();
    expect((await server.events(a.id)).slice(-2).map((e) => [e.type, e.step_id])).toEqual([
      ['step.timed_out', stepId],
      ['execution.failed', undefined],
    ]);
  });

  it('sends an approved remote call to a runner', async () => {
    const runner = await server.connectRunner('r7', ['deploy']);
    const a = await server.startedAgent();
    const stepId = (await invoke(a, 'deploy', { env: 'prod' })).body['step_id'] as string;
    await a.signal('step.approve', { step_id: stepId, approved: true });
    const job = await runner.nextJob();
    expect(job).toMatchObject({ step_id: stepId, tool_id: 'deploy', arguments: { env: 'prod' } });
    await runner.report(job, { success: true, data: 'ok' });
    expect((await a.stream.next('tool.result')).data).toMatchObject({ step_id: stepId, status: 'succeeded' });
  });
});
