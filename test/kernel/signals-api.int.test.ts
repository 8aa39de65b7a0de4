import { describe, expect, it } from 'vitest';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { useKernelServer } from '../fixtures/kernel/kernel-server.js';
import { tempPolicyFile } from '../fixtures/kernel/policy-file.js';

/**
 * Signals, waits and approvals (V0-API.md §9, §12) as a spec-only HTTP/SSE agent sees them, on
 * both backends. The conformance checklist (§18) is conformance.int.test.ts; these are the edges
 * around its items 16, 17 and 26–28.
 */

const policyFile = tempPolicyFile(
  'signals',
  `rules:
  - { id: ask-first, priority: 10, when: { tool_id: deploy }, then: { decision: require_approval, reason: "deploys need a person" } }
  - { id: reads, priority: 20, when: { tool_id: read_file }, then: { decision: allow } }
`,
);

describe.each(kernelBackends({ policyFile }))('on %s', (_backend, open) => {
  const server = useKernelServer(open);

  it('blocks a wait until its signal comes, then resumes and pushes the signal with its execution id', async () => {
    const a = await server.startedAgent();
    expect((await a.intent({ type: 'wait', signal_type: 'go' })).body).toEqual({ accepted: true });
    expect(await server.status(a.id)).toBe('blocked');
    expect((await server.events(a.id)).at(-1)).toMatchObject({ type: 'execution.blocked', payload: { reason: 'signal', ref: 'go' } });
    expect((await a.intent({ type: 'complete' })).status).toBe(409);
    expect(await a.signal('go', { ok: true })).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await a.stream.next('signal.received')).data).toEqual({ execution_id: a.id, signal_type: 'go', payload: { ok: true } });
    expect(await server.status(a.id)).toBe('running');
    expect((await server.events(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['signal.received', { signal_type: 'go', payload: { ok: true } }],
      ['execution.resumed', { reason: 'signal received: go' }],
    ]);
  });

  it('lets a later wait consume a signal sent before it, without blocking, and pushes that signal again after the answer', async () => {
    const a = await server.startedAgent();
    await a.signal('ready', { n: 1 });
    expect((await a.stream.next('signal.received')).data).toMatchObject({ signal_type: 'ready' });
    expect((await a.intent({ type: 'wait', signal_type: 'ready' })).body).toEqual({ accepted: true });
    expect(await server.status(a.id)).toBe('running');
    expect((await a.stream.next('signal.received')).data).toEqual({ execution_id: a.id, signal_type: 'ready', payload: { n: 1 } });
    // Consumed: the next wait blocks.
    await a.intent({ type: 'wait', signal_type: 'ready' });
    expect(await server.status(a.id)).toBe('blocked');
  });

  it('refuses a signal without a type (400), to an ended execution (409) or an unknown one (404)', async () => {
    const a = await server.startedAgent();
    expect((await a.signal('')).body).toEqual({ error: 'signal_type is required', code: 'VALIDATION_ERROR' });
    await a.intent({ type: 'complete' });
    expect((await a.signal('go')).status).toBe(409);
    expect((await server.post('/v0/executions/nope/signal', { signal_type: 'go' })).status).toBe(404);
  });

  it('holds a call that needs approval, blocks the execution, and runs it once a person approves', async () => {
    const a = await server.startedAgent();
    const asked = await a.intent({ type: 'invoke_tool', tool_id: 'deploy', arguments: { env: 'staging' } });
    expect(asked.body).toEqual({ accepted: true, step_id: expect.any(String), pending_approval: true });
    const stepId = asked.body['step_id'] as string;
    expect(await server.status(a.id)).toBe('blocked');
    const log = await server.events(a.id);
    expect(log.slice(-3).map((e) => e.type)).toEqual(['step.created', 'step.approval_required', 'execution.blocked']);
    expect(log.at(-2)?.payload).toEqual({ tool_id: 'deploy', arguments: { env: 'staging' }, remote: false, reason: 'deploys need a person' });
    expect(log.at(-1)?.payload).toEqual({ reason: 'approval', ref: stepId, tool_id: 'deploy', arguments: { env: 'staging' } });
    expect((await a.intent({ type: 'invoke_tool', tool_id: 'read_file' })).body).toMatchObject({ code: 'CONFLICT', error: expect.stringContaining('blocked pending approval') });

    expect((await a.signal('step.approve', { step_id: 'other', approved: true })).status).toBe(400);
    expect(await server.status(a.id)).toBe('blocked');
    expect((await a.signal('step.approve', { step_id: stepId, approved: true })).status).toBe(200);
    expect((await a.stream.next('approval.resolved')).data).toEqual({ execution_id: a.id, step_id: stepId, approved: true, session_id: a.session });
    expect(await server.status(a.id)).toBe('running');
    expect((await server.events(a.id)).slice(-2).map((e) => [e.type, e.payload['reason'] ?? e.payload['runner_id']])).toEqual([
      ['step.dispatched', ''],
      ['execution.resumed', 'approval granted'],
    ]);
    // The agent runs the approved tool and reports it, then finishes.
    await a.report(stepId, { success: true, data: 'deployed' });
    expect((await a.stream.next('tool.result')).data).toMatchObject({ step_id: stepId, status: 'succeeded', result: 'deployed' });
    expect((await a.intent({ type: 'complete' })).status).toBe(200);
  });

  it('fails the step a person denies, with the reason, and resumes the execution', async () => {
    const a = await server.startedAgent();
    const stepId = (await a.intent({ type: 'invoke_tool', tool_id: 'deploy' })).body['step_id'] as string;
    await a.signal('step.approve', { step_id: stepId, approved: false, reason: 'not on a Friday' });
    expect((await a.stream.next('approval.resolved')).data).toMatchObject({ step_id: stepId, approved: false });
    expect((await server.events(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['step.failed', { error: 'not on a Friday', retryable: false }],
      ['execution.resumed', { reason: 'approval denied' }],
    ]);
    expect(await server.status(a.id)).toBe('running');
    expect((await a.intent({ type: 'complete' })).status).toBe(200);
  });
});
