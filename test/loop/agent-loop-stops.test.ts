import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../src/base/errors.js';
import type { LoopCall } from '../../src/loop/loop-types.js';
import type { CallOutcome } from '../../src/proxy/tool-call.js';
import { loopDoubles } from '../helpers/loop-doubles.js';
import { ask, collectLoop, expectLoopError, textOf } from '../helpers/loop-run.js';

// How the agent loop stops short: the client's abort, the consumer leaving, an upstream or
// resolver failure. The upstream is in-process (test/helpers/mock-provider.ts), so each test can
// see that the upstream request's own signal was aborted; agent-loop.int.test.ts checks the same
// against an HTTP upstream and a real subprocess tool.

/** A tool that runs until its call's signal aborts; `started` settles once it runs. */
function hangingTool(): { call: (call: LoopCall) => Promise<CallOutcome>; started: Promise<LoopCall> } {
  let began: (call: LoopCall) => void = () => undefined;
  const started = new Promise<LoopCall>((resolve) => (began = resolve));
  const call = (call: LoopCall): Promise<CallOutcome> =>
    new Promise((resolve) => {
      began(call);
      call.run?.signal?.addEventListener('abort', () => resolve({ callId: 'p', tool: call.target.tool, durationMs: 1, stuck: false, status: 'error', error: { code: 'TOOL_CANCELLED', message: 'stopped' } }), { once: true });
    });
  return { call, started };
}

describe('agent loop: cancellation and failures', () => {
  it("stops when the client aborts mid-stream: the upstream request's signal and the running tool's are aborted, TOOL_CANCELLED thrown", async () => {
    const tool = hangingTool();
    const { provider, deps } = loopDoubles([{ text: ['Working. [TOOL: echo the text "slow"] waiting', ' for it'], stall: true }], { call: tool.call });
    const controller = new AbortController();
    const { events, error } = await collectLoop(deps, ask('Go.'), { mode: 'execute', signal: controller.signal }, async (event) => {
      if (event.type === 'call') controller.abort();
    });
    expectLoopError(error, 'TOOL_CANCELLED', /client cancelled/);
    expect(events.some((e) => e.type === 'finish')).toBe(false);
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0]?.signal?.aborted).toBe(true);
    expect(provider.requests[0]?.ended).toBe('aborted');
    expect((await tool.started).run?.signal?.aborted).toBe(true);
  });

  it('passes on the reason of a client that says why it stopped (the gateway closing) instead of a client cancel', async () => {
    const { deps } = loopDoubles([{ text: ['Working.'], stall: true }]);
    const controller = new AbortController();
    const closing = new KiwiError('UNAVAILABLE', 'the gateway is shutting down');
    const { error } = await collectLoop(deps, ask('Go.'), { mode: 'execute', signal: controller.signal }, () => controller.abort(closing));
    expect(error).toBe(closing);
  });

  it('cancels the upstream request and the running tool when the consumer stops iterating', async () => {
    const tool = hangingTool();
    const { provider, deps } = loopDoubles([{ text: ['Working. [TOOL: echo the text "slow"] waiting'], stall: true }], { call: tool.call });
    const { error } = await collectLoop(deps, ask('Go.'), { mode: 'execute' }, (event) => event.type === 'call');
    expect(error).toBeUndefined();
    expect(provider.requests[0]?.signal?.aborted).toBe(true);
    expect(provider.requests[0]?.ended).toBe('aborted');
    expect((await tool.started).run?.signal?.aborted).toBe(true);
  });

  it('throws TOOL_CANCELLED at once for a signal that is already aborted', async () => {
    const { provider, deps } = loopDoubles([]);
    const { events, error } = await collectLoop(deps, ask('x'), { mode: 'execute', signal: AbortSignal.abort() });
    expect(events).toEqual([]);
    expectLoopError(error, 'TOOL_CANCELLED', /client cancelled/);
    expect(provider.requests).toHaveLength(0);
  });

  it('propagates an upstream error mid-stream after the text before it', async () => {
    const { deps } = loopDoubles([{ text: ['Sure, here is ', 'the summary:'], error: new KiwiError('UPSTREAM_HTTP', 'The server had an error while processing your request.') }]);
    const { events, error } = await collectLoop(deps, ask('Summarise.'));
    expectLoopError(error, 'UPSTREAM_HTTP', /server had an error/);
    expect(events[0]?.type).toBe('start');
    expect(textOf(events)).toBe('Sure, here is the summary:');
    expect(events.some((e) => e.type === 'finish')).toBe(false);
  });

  it('throws a refused upstream request before any event, so the edge can still answer with its status', async () => {
    const refusal = new KiwiError('UPSTREAM_HTTP', 'the upstream answered 401: invalid API key');
    const { deps } = loopDoubles([{ refuse: refusal }]);
    const { events, error } = await collectLoop(deps, ask('Hi.'));
    expect(error).toBe(refusal);
    expect(events).toEqual([]);
  });

  it('propagates a failing resolver and stops the upstream stream', async () => {
    const { provider, deps } = loopDoubles([{ text: ['[TOOL: echo the text "x"] and more', ' text'], stall: true }], { resolve: () => Promise.reject(new KiwiError('INTERNAL', 'the index is gone')) });
    const { error } = await collectLoop(deps, ask('x'));
    expectLoopError(error, 'INTERNAL', /index is gone/);
    expect(provider.requests[0]?.signal?.aborted).toBe(true);
    expect(provider.requests[0]?.ended).toBe('aborted');
  });
});
