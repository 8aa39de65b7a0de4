import { describe, expect, it } from 'vitest';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { useKernelServer } from '../fixtures/kernel/kernel-server.js';
import { tempPolicyFile } from '../fixtures/kernel/policy-file.js';

/**
 * The kernel's watcher (V0-API.md §8.3, §11.3, §16) on a clock the test moves: a missed step
 * deadline (checklist item 31), an execution past its maximum duration, a blocked execution
 * whose agent is gone. Each pass is run by the test (`reaper.sweep()`), not on the 30 s beat.
 */

const policyFile = tempPolicyFile(
  'reaper',
  [
    'rules:',
    '  - { id: quick, priority: 1, when: { tool_id: slow }, then: { decision: allow, timeout_ms: 1000 } }',
    '  - { id: patient, priority: 2, when: { tool_id: patient }, then: { decision: allow, timeout_ms: 7200000 } }',
    '  - { id: others, priority: 3, then: { decision: allow } }',
    '',
  ].join('\n'),
);

let clock = Date.parse('2026-11-23T10:00:00.000Z');
const now = (): Date => new Date(clock);

describe.each(kernelBackends({ policyFile, now, reaperIntervalMs: 0, executionTimeoutMs: 3_600_000 }))('on %s', (_backend, open) => {
  const server = useKernelServer(open);

  it('fails an execution whose step missed its deadline, cancelling the steps beside it', async () => {
    const a = await server.startedAgent();
    const slow = (await a.intent({ type: 'invoke_tool', tool_id: 'slow' })).body['step_id'] as string;
    const other = (await a.intent({ type: 'invoke_tool', tool_id: 'read_file' })).body['step_id'] as string;
    clock += 500;
    await server.kernel.reaper.sweep();
    expect(await server.status(a.id)).toBe('running');
    clock += 1000;
    await server.kernel.reaper.sweep();
    expect(await server.status(a.id)).toBe('failed');
    expect((await server.events(a.id)).slice(-3).map((e) => [e.type, e.step_id, e.payload])).toEqual([
      ['step.timed_out', slow, {}],
      ['step.cancelled', other, { reason: 'sibling step timed out' }],
      ['execution.failed', undefined, { error: 'step timed out' }],
    ]);
  });

  it('fails an execution past its maximum duration', async () => {
    const a = await server.startedAgent();
    await a.intent({ type: 'invoke_tool', tool_id: 'patient' });
    clock += 3_600_001;
    await server.kernel.reaper.sweep();
    expect(await server.status(a.id)).toBe('failed');
    expect((await server.events(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['step.cancelled', { reason: 'execution timed out' }],
      ['execution.failed', { error: 'execution exceeded maximum duration' }],
    ]);
  });

  it('keeps a blocked execution blocked when its agent goes, then puts it back to pending once no connection of that agent is left', async () => {
    const a = await server.startedAgent();
    await a.intent({ type: 'wait', signal_type: 'go' });
    a.stream.close();
    await expect.poll(() => server.kernel.agents.connected(a.agent)).toBe(false);
    expect(await server.status(a.id)).toBe('blocked');
    // Its session is dropped a moment after the connection; the pass after that resets it.
    await expect.poll(async () => (await server.kernel.reaper.sweep(), await server.status(a.id))).toBe('pending');
    expect((await server.events(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['agent.timeout', { session_id: '' }],
      ['execution.reset', { reason: 'recovery', from_status: 'blocked' }],
    ]);
  });
});
