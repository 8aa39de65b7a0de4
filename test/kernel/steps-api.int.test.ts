import { describe, expect, it } from 'vitest';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { useKernelServer } from '../fixtures/kernel/kernel-server.js';
import { tempPolicyFile } from '../fixtures/kernel/policy-file.js';

/**
 * Tool calls an agent runs itself (V0-API.md §6.2, §6.3, §9, §11) as a spec-only HTTP/SSE agent
 * sees them, on both backends. The conformance checklist (§18) is conformance.int.test.ts; these are
 * the edges around its items 12, 22, 23 and 28.
 */

const policyFile = tempPolicyFile(
  'steps',
  `rules:
  - id: read-ok
    priority: 10
    when: { tool_ids: ["read_*", "fail_*"] }
    then: { decision: allow }
`,
);

describe.each(kernelBackends({ policyFile }))('on %s', (_backend, open) => {
  const server = useKernelServer(open);

  it('runs a local tool: a step, its result, tool.result to the agent, then complete', async () => {
    const a = await server.startedAgent();
    const invoked = await a.invoke('read_file', { path: 'README.md' });
    expect(invoked.status).toBe(200);
    expect(invoked.body).toEqual({ accepted: true, step_id: expect.any(String) });
    const stepId = invoked.body['step_id'] as string;
    const reported = await a.report(stepId, { success: true, data: { text: '# Kiwi' } });
    expect(reported).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'succeeded', result: { text: '# Kiwi' } });
    expect((await a.intent({ type: 'complete', output: 'done' })).status).toBe(200);
    const log = await server.events(a.id);
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.completed', 'intent.accepted', 'execution.completed']);
    expect(log[3]).toMatchObject({ step_id: stepId, payload: { tool_id: 'read_file', tool_version: 0, arguments: { path: 'README.md' }, max_attempts: 1, attempt: 1 } });
    expect(log[2]?.payload).toEqual({ intent_type: 'invoke_tool', details: { tool_id: 'read_file', arguments: { path: 'README.md' }, idempotency_key: `${a.id}:read_file:1a2b3c4d` } });
    expect(log[4]?.payload).toEqual({ result: { text: '# Kiwi' } });
  });

  it('a failing tool is step.failed, not retried, and tool.result says failed; its result cannot be reported twice', async () => {
    const a = await server.startedAgent();
    const stepId = (await a.invoke('fail_always')).body['step_id'] as string;
    await a.report(stepId, { success: false, error: 'disk on fire' });
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'failed', error: 'disk on fire' });
    expect((await server.events(a.id)).at(-1)).toMatchObject({ type: 'step.failed', payload: { error: 'disk on fire', retryable: false } });
    const twice = await a.report(stepId, { success: true });
    expect(twice).toEqual({ status: 409, body: { error: 'step already resolved', code: 'CONFLICT' } });
    expect((await a.report('nope', { success: true })).body).toEqual({ error: 'not found: step nope', code: 'NOT_FOUND' });
    expect((await server.post('/v0/agents/step-result', { execution_id: a.id, session_id: a.session })).body).toEqual({ error: 'execution_id, session_id, and step_id are required', code: 'VALIDATION_ERROR' });
  });

  it('refuses to complete with a step open (409), keeping the intent.accepted', async () => {
    const a = await server.startedAgent();
    await a.invoke('read_file');
    const refused = await a.intent({ type: 'complete' });
    expect(refused).toEqual({ status: 409, body: { error: 'conflict: cannot complete with active steps in progress', code: 'CONFLICT' } });
    expect((await server.events(a.id)).at(-1)).toMatchObject({ type: 'intent.accepted', payload: { intent_type: 'complete' } });
  });

  it('cancels the open steps of an agent that goes, and hands the finished ones back as history on reassignment', async () => {
    const a = await server.startedAgent();
    const done = (await a.invoke('read_file', { path: 'a' })).body['step_id'] as string;
    await a.report(done, { success: true, data: 'A' });
    const open = (await a.invoke('read_file', { path: 'b' })).body['step_id'] as string;
    a.stream.close();
    await expect.poll(async () => (await server.events(a.id)).map((e) => e.type).includes('execution.reset')).toBe(true);
    const log = await server.events(a.id);
    expect(log.find((e) => e.type === 'step.cancelled')).toMatchObject({ step_id: open, payload: { reason: 'agent disconnected' } });
    const back = await server.connectAgent(a.agent);
    const assigned = (await back.next('execution.assigned')).data as { history: Record<string, unknown>[] };
    expect(assigned.history.map((h) => [h['step_id'], h['status']])).toEqual([
      [done, 'succeeded'],
      [open, 'cancelled'],
    ]);
    expect(assigned.history[0]).toMatchObject({ tool_id: 'read_file', arguments: { path: 'a' }, result: 'A' });
    expect(assigned.history[1]).toMatchObject({ error: 'agent disconnected' });
  });
});
