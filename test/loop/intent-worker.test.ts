import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../src/base/errors.js';
import { feedbackMessage } from '../../src/loop/agent-feedback.js';
import { createIntentWorker, type IntentWorkerDeps } from '../../src/loop/intent-worker.js';
import { type LoopEvent } from '../../src/loop/loop-types.js';
import { DEFAULT_LOOP_LIMITS, type LoopLimits } from '../../src/loop/loop-limits.js';
import type { LoopCall } from '../../src/loop/loop-types.js';
import type { CallOutcome } from '../../src/proxy/tool-call.js';
import type { Resolution } from '../../src/resolver/types.js';

const timings = { embedMs: 0, searchMs: 0, fillMs: 0, totalMs: 0 };

/** Intents "echo X" resolve to echo_text {text: X}; anything else is unresolved. */
function scriptedResolve(intent: string): Promise<Resolution> {
  const m = /^echo (.+)$/.exec(intent);
  if (m) return Promise.resolve({ status: 'resolved', call: { tool: 'echo_text', arguments: { text: m[1] } }, confidence: 0.9, candidates: [], timings, notes: [] });
  return Promise.resolve({ status: 'unresolved', reason: 'no tool fits', missing: [], confidence: 0, candidates: [{ tool: 'echo_text', score: 0.1 }], timings, notes: [] });
}

function setup(overrides: { limits?: Partial<LoopLimits>; mode?: IntentWorkerDeps['mode']; resolve?: IntentWorkerDeps['resolve']; outcome?: (call: LoopCall) => Partial<CallOutcome> } = {}) {
  const events: LoopEvent[] = [];
  const failures: unknown[] = [];
  const resolved: string[] = [];
  const calls: LoopCall[] = [];
  const controller = new AbortController();
  let ids = 0;
  const worker = createIntentWorker({
    resolve: (intent, options) => {
      resolved.push(intent);
      return (overrides.resolve ?? scriptedResolve)(intent, options);
    },
    call: (call): Promise<CallOutcome> => {
      calls.push(call);
      return Promise.resolve({ callId: 'c', tool: call.target.tool, durationMs: 1, stuck: false, status: 'ok', result: { text: `echo: ${JSON.stringify(call.target.args)}`, isError: false }, ...overrides.outcome?.(call) } as CallOutcome);
    },
    limits: { ...DEFAULT_LOOP_LIMITS, ...overrides.limits },
    mode: overrides.mode ?? 'execute',
    newId: () => String(++ids),
    now: () => 0,
    signal: controller.signal,
    push: (event) => events.push(event),
    onFailure: (error) => failures.push(error),
  });
  const run = async (...intents: string[]): Promise<void> => {
    for (const [i, intent] of intents.entries()) worker.enqueue(i, intent, '');
    await worker.drained();
  };
  return { worker, events, failures, resolved, calls, controller, run };
}

describe('intent worker', () => {
  it("a call whose hook decided abort fails the request with the hook's reason, after its result is reported", async () => {
    const { events, failures, run } = setup({ outcome: () => ({ abort: 'stop here (hook at policy.yaml:3)' }) });
    await run('echo one');
    expect(events.filter((e) => e.type === 'result')).toHaveLength(1);
    expect(failures).toEqual([expect.objectContaining({ code: 'HOOK_ABORTED', message: 'a hook aborted the run at echo_text: stop here (hook at policy.yaml:3)' })]);
  });

  it('is busy from the moment an intent is queued until its work is done, a failed one included', async () => {
    let release: () => void = () => undefined;
    const { worker } = setup({ resolve: (intent) => (intent === 'slow' ? new Promise((resolve) => (release = () => resolve(scriptedResolve('echo slow')))) : Promise.reject(new Error('resolver down'))) });
    expect(worker.busy).toBe(false);
    worker.enqueue(0, 'slow', '');
    worker.enqueue(1, 'fails', '');
    expect(worker.busy).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(worker.busy).toBe(true);
    release();
    await worker.drained();
    expect(worker.busy).toBe(false);
  });

  it('counts every intent toward maxToolCalls, runs or not, and neither resolves nor feeds back any past it', async () => {
    const { worker, events, resolved, calls, run } = setup({ limits: { maxToolCalls: 3 } });
    await run('frobnicate', 'echo a', 'zebra', 'echo b', 'echo c');
    expect(resolved).toEqual(['frobnicate', 'echo a', 'zebra']);
    expect(calls.map((c) => c.target.args)).toEqual([{ text: 'a' }]);
    expect(worker.toolCalls).toBe(1);
    expect(worker.limit).toBe('tool_calls');
    const over = events.filter((e) => e.type === 'unresolved' && e.index >= 3);
    expect(over).toEqual([3, 4].map((index) => expect.objectContaining({ index, reason: expect.stringMatching(/limit of 3 tool intents/), candidates: [] })));
    const report = worker.endTurn();
    expect(report.items.map((item) => item.intent)).toEqual(['frobnicate', 'echo a', 'zebra']);
    expect(worker.endTurn()).toEqual({ items: [], handedOut: 0 });
  });

  it('refuses a call the maxRepeats-th time it is asked for, and counts the refusal as an intent', async () => {
    const { worker, events, calls, run } = setup({ limits: { maxRepeats: 2, maxToolCalls: 3 } });
    await run('echo a', 'echo a', 'echo b', 'echo c');
    expect(calls).toHaveLength(2);
    expect(events.filter((e) => e.type === 'unresolved')).toEqual([
      expect.objectContaining({ index: 1, reason: expect.stringMatching(/^the same call \(echo_text with the same arguments\) was asked for 2 times/), candidates: ['echo_text'] }),
      expect.objectContaining({ index: 3, reason: expect.stringMatching(/limit of 3 tool intents/) }),
    ]);
    expect(worker.limit).toBe('repeats');
  });

  it('hands calls out in resolve-only mode without running them', async () => {
    const { worker, events, calls, run } = setup({ mode: 'resolve-only' });
    await run('echo a', 'zebra');
    expect(calls).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(['call', 'unresolved']);
    expect(worker.endTurn().handedOut).toBe(1);
  });

  it('reports a resolver failure once, and ends aborted work quietly', async () => {
    const failing = setup({ resolve: () => Promise.reject(new KiwiError('INTERNAL', 'the index is gone')) });
    await failing.run('echo a');
    expect(failing.failures).toEqual([expect.objectContaining({ code: 'INTERNAL' })]);
    const aborted = setup({ resolve: () => Promise.reject(new KiwiError('TOOL_CANCELLED', 'stopped')) });
    aborted.controller.abort();
    await aborted.run('echo a', 'echo b');
    expect(aborted.failures).toEqual([]);
    expect(aborted.resolved).toEqual([]);
  });

  it('runs the steps of one intent in order, each resolved and called on its own, and feeds each back as a step', async () => {
    const { worker, events, resolved, calls, run } = setup();
    await run('echo a and then echo b');
    expect(resolved).toEqual(['echo a', 'echo b']);
    expect(calls.map((c) => c.target.args)).toEqual([{ text: 'a' }, { text: 'b' }]);
    expect(events.map((e) => e.type)).toEqual(['call', 'result', 'call', 'result']);
    expect(events.every((e) => 'index' in e && e.index === 0)).toBe(true);
    const { items } = worker.endTurn();
    expect(items.map((item) => [item.intent, item.kind === 'refused' || item.kind === 'note' ? undefined : item.step])).toEqual([
      ['echo a', { n: 1, of: 2, notRun: [] }],
      ['echo b', { n: 2, of: 2, notRun: [] }],
    ]);
    const text = feedbackMessage(items, { maxResultChars: 1000 });
    expect(text).toContain('[1] Intent, step 1 of 2 of one intent: echo a');
    expect(text).toContain('[2] Intent, step 2 of 2 of one intent: echo b');
    expect(text).not.toContain('Not run');
  });

  it('stops at the first step that is not resolved, and says which later steps did not run', async () => {
    const { worker, events, resolved, calls, run } = setup();
    await run('echo a, then frobnicate, then echo c');
    expect(resolved).toEqual(['echo a', 'frobnicate']);
    expect(calls.map((c) => c.target.args)).toEqual([{ text: 'a' }]);
    expect(events.filter((e) => e.type === 'unresolved')).toEqual([
      expect.objectContaining({ intent: 'frobnicate', reason: 'no tool fits' }),
      expect.objectContaining({ intent: 'echo c', reason: expect.stringMatching(/^not run: the steps after step 2 of 3/) }),
    ]);
    const { items } = worker.endTurn();
    expect(items.map((item) => item.intent)).toEqual(['echo a', 'frobnicate']);
    expect(feedbackMessage(items, { maxResultChars: 1000 })).toContain('Not run, because they come after this step and it did not succeed: "echo c"');
  });

  it('counts every step toward maxToolCalls, and runs none of an intent with more steps than the cap', async () => {
    const failing = setup({ limits: { maxToolCalls: 2 } });
    await failing.run('echo a then echo b then echo c');
    expect(failing.calls).toHaveLength(2);
    expect(failing.worker.limit).toBe('tool_calls');
    const refused = setup();
    await refused.run('echo 1 then echo 2 then echo 3 then echo 4 then echo 5 then echo 6');
    expect(refused.resolved).toEqual([]);
    expect(refused.worker.endTurn().items).toEqual([{ kind: 'refused', intent: 'echo 1 then echo 2 then echo 3 then echo 4 then echo 5 then echo 6', reason: expect.stringMatching(/6 steps, and one intent may have at most 5/) }]);
  });

  it('leaves an intent that is not a sequence exactly as it was', async () => {
    const { worker, resolved, run } = setup();
    await run('echo cats and dogs');
    expect(resolved).toEqual(['echo cats and dogs']);
    expect(worker.endTurn().items).toEqual([expect.not.objectContaining({ step: expect.anything() })]);
  });
});
