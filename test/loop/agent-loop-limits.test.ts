import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../src/base/errors.js';
import { limitNotice } from '../../src/loop/agent-feedback.js';
import { DEFAULT_LOOP_LIMITS } from '../../src/loop/loop-limits.js';
import { loopDoubles } from '../helpers/loop-doubles.js';
import { ask, collectLoop, finishOf, ofType, textOf } from '../helpers/loop-run.js';

// The agent loop's limits, on the in-process upstream (test/helpers/mock-provider.ts).

const usage = { inputTokens: 10, outputTokens: 5 };

describe('agent loop: limits', () => {
  it('stops after maxTurns turns with a readable notice and finish.limit "turns"', async () => {
    const { provider, deps } = loopDoubles([{ text: ['[TOOL: echo the text "one"]'] }, { text: ['[TOOL: echo the text "two"]'] }], { limits: { maxTurns: 2 } });
    const { events } = await collectLoop(deps, ask('Go.'));
    expect(ofType(events, 'result').map((e) => e.text)).toEqual(['echo: one', 'echo: two']);
    expect(provider.requests).toHaveLength(2);
    expect(events.at(-2)).toEqual({ type: 'text', text: limitNotice('turns', { ...DEFAULT_LOOP_LIMITS, maxTurns: 2 }) });
    expect(textOf(events)).toMatch(/all 2 model turns.*limits\.max_turns.*\.ai\/config\/gateway\.yaml/s);
    expect(finishOf(events)).toMatchObject({ reason: 'stop', turns: 2, toolCalls: 2, limit: 'turns' });
  });

  it('starts no turn past maxTokens (input and output as the upstream reports them) and says so, finish.limit "tokens"', async () => {
    const turns = ['one', 'two', 'three'].map((word) => ({ text: [`[TOOL: echo the text "${word}"]`], usage }));
    const { provider, deps } = loopDoubles(turns, { limits: { maxTokens: 30 } });
    const { events } = await collectLoop(deps, ask('Go.'));
    expect(ofType(events, 'result').map((e) => e.text)).toEqual(['echo: one', 'echo: two']);
    expect(provider.requests).toHaveLength(2);
    expect(events.at(-2)).toEqual({ type: 'text', text: limitNotice('tokens', { ...DEFAULT_LOOP_LIMITS, maxTokens: 30 }) });
    expect(textOf(events)).toMatch(/budget of 30 tokens.*limits\.max_tokens/s);
    expect(finishOf(events)).toMatchObject({ turns: 2, usage: { inputTokens: 20, outputTokens: 10 }, limit: 'tokens' });
  });

  it('charges each turn and each call to its budget and starts no turn once one ran out: the notice, then finish.limit "budget" with what ran out', async () => {
    const charged: (number | undefined)[] = [];
    const stop = { scope: 'client' as const, name: 'ci', resource: 'tokens' as const, used: 30, limit: 25, field: 'budgets.clients.ci' };
    let counted = 0;
    const budget = { charge: (u: { inputTokens?: number } | undefined) => void charged.push(u?.inputTokens), countToolCall: () => void counted++, exhausted: () => (charged.length >= 2 ? stop : undefined) };
    const turns = ['one', 'two', 'three'].map((word) => ({ text: [`[TOOL: echo the text "${word}"]`], usage }));
    const { provider, deps, calls } = loopDoubles(turns, { budget });
    const { events } = await collectLoop(deps, ask('Go.'));
    expect(charged).toEqual([10, 10]);
    // The proxy's budget stage counts the calls: the loop hands each its request's budget.
    expect(calls.map((c) => c.run?.budget)).toEqual([budget, budget]);
    expect(provider.requests).toHaveLength(2);
    expect(ofType(events, 'result').map((e) => e.text)).toEqual(['echo: one', 'echo: two']);
    expect(textOf(events)).toMatch(/\[Kiwi gateway: stopped because client "ci" used its token budget \(30 tokens of 25 tokens\)\. To allow more, raise `budgets\.clients\.ci\.tokens`/);
    expect(finishOf(events)).toMatchObject({ turns: 2, limit: 'budget', budget: stop });
  });

  it('charges a turn the consumer stopped mid-stream for its prompt and the text so far (estimated), and nothing for one the upstream refused', async () => {
    const charged: unknown[] = [];
    const budget = { charge: (u: unknown) => void charged.push(u), countToolCall: () => undefined, exhausted: () => undefined };
    const cut = loopDoubles([{ text: ['one ', 'two ', 'three'], stall: true }], { budget });
    const { events } = await collectLoop(cut.deps, ask('Go.'), { mode: 'execute' }, (e) => e.type === 'text' && e.text.includes('two'));
    expect(textOf(events)).toBe('one two ');
    expect(charged).toEqual([{ inputTokens: expect.any(Number), outputTokens: 2, estimated: true }]);
    expect((charged[0] as { inputTokens: number }).inputTokens).toBeGreaterThan(100); // the intent instructions went up too

    const refused = loopDoubles([{ refuse: new KiwiError('UPSTREAM_HTTP', 'the upstream answered 429: rate limited') }], { budget });
    expect((await collectLoop(refused.deps, ask('Go.'))).error).toBeDefined();
    expect(charged).toHaveLength(1);
  });

  it('runs no intent over maxToolCalls and stops after that turn with finish.limit "tool_calls"', async () => {
    const { provider, deps, calls } = loopDoubles([{ text: ['[TOOL: echo the text "one"] [TOOL: reverse the letters of the word "two"] rest of the turn'] }], { limits: { maxToolCalls: 1 } });
    const { events } = await collectLoop(deps, ask('Go.'));
    expect(ofType(events, 'result').map((e) => e.tool)).toEqual(['echo_text']);
    expect(ofType(events, 'unresolved')).toEqual([expect.objectContaining({ index: 1, reason: expect.stringMatching(/limit of 1 tool intents/) })]);
    expect(textOf(events)).toContain('rest of the turn');
    expect(textOf(events)).toMatch(/limits\.max_tool_calls/);
    expect(finishOf(events)).toMatchObject({ turns: 1, toolCalls: 1, limit: 'tool_calls' });
    expect(provider.requests).toHaveLength(1);
    expect(calls.map((c) => c.target.tool)).toEqual(['echo_text']);
  });

  it('counts unresolved intents toward maxToolCalls: 10,000 in one turn cost 16 resolutions, and nothing is fed back', async () => {
    const intents = Array.from({ length: 10_000 }, (_, i) => `[TOOL: frobnicate the quux number ${i}] `);
    const chunks = Array.from({ length: 100 }, (_, i) => intents.slice(i * 100, (i + 1) * 100).join(''));
    const { provider, deps, resolved } = loopDoubles([{ text: chunks }, { text: ['never asked for'] }]);
    const { events, error } = await collectLoop(deps, ask('Frobnicate.'));
    expect(error).toBeUndefined();
    expect(resolved.length, 'intents past max_tool_calls must not even be resolved').toBe(DEFAULT_LOOP_LIMITS.maxToolCalls);
    const overLimit = ofType(events, 'unresolved').filter((e) => /limit of 16 tool intents/.test(e.reason));
    expect(overLimit).toHaveLength(10_000 - DEFAULT_LOOP_LIMITS.maxToolCalls);
    expect(overLimit[0]?.index).toBe(DEFAULT_LOOP_LIMITS.maxToolCalls);
    expect(finishOf(events)).toMatchObject({ turns: 1, limit: 'tool_calls' });
    expect(provider.requests, 'no feedback message may go upstream after the limit').toHaveLength(1);
  });

  it('counts unresolved and denied intents toward maxToolCalls like calls that ran', async () => {
    const { deps, resolved, calls } = loopDoubles([{ text: ['[TOOL: send a chat message to a channel] [TOOL: wipe the whole disk] [TOOL: echo the text "a"] [TOOL: echo the text "b"]'] }], { limits: { maxToolCalls: 3 } });
    const { events } = await collectLoop(deps, ask('Go.'));
    expect(resolved).toHaveLength(3);
    expect(ofType(events, 'unresolved').map((e) => e.index)).toEqual([0, 3]);
    expect(ofType(events, 'unresolved')[1]?.reason).toMatch(/limit of 3 tool intents \(run, denied, unresolved or refused alike\)/);
    expect(ofType(events, 'result').map((e) => `${e.tool}:${e.status}`)).toEqual(['wipe_disk:denied', 'echo_text:ok']);
    expect(finishOf(events)).toMatchObject({ turns: 1, toolCalls: 2, limit: 'tool_calls' });
    expect(textOf(events)).toMatch(/more than the 3 tool intents one request may have.*limits\.max_tool_calls/s);
    expect(calls.map((c) => c.target.tool)).toEqual(['wipe_disk', 'echo_text']);
  });

  it('ends an agent that loops on one intent with finish.limit "repeats", without running the repeat', async () => {
    const { provider, deps, calls } = loopDoubles([]);
    provider.replyAlways({ text: ['Trying again. [TOOL: echo the text "loop"]'] });
    const { events } = await collectLoop(deps, ask('Go.'));
    expect(ofType(events, 'result')).toHaveLength(DEFAULT_LOOP_LIMITS.maxRepeats - 1);
    expect(ofType(events, 'unresolved')).toEqual([expect.objectContaining({ reason: expect.stringMatching(/asked for 3 times.*looping/), candidates: ['echo_text'] })]);
    expect(textOf(events)).toMatch(/same tool call 3 times.*limits\.max_repeats/s);
    expect(finishOf(events)).toMatchObject({ turns: 3, toolCalls: 2, limit: 'repeats' });
    expect(provider.requests).toHaveLength(3);
    expect(calls.map((c) => c.target.tool)).toEqual(['echo_text', 'echo_text']);
  });

  it('stops at maxDurationMs: cancels the stalled upstream and the running tool, reports both, and finishes with limit "duration"', async () => {
    const { provider, deps } = loopDoubles([{ text: ['Working. [TOOL: echo the text "slow"] waiting'], stall: true }], {
      limits: { maxDurationMs: 200 },
      call: (call) =>
        new Promise((resolve) =>
          call.run?.signal?.addEventListener('abort', () => resolve({ callId: 'p', tool: call.target.tool, durationMs: 1, stuck: false, status: 'error', error: { code: 'TOOL_CANCELLED', message: 'stopped' } }), { once: true }),
        ),
    });
    const { events, error } = await collectLoop(deps, ask('Go.'));
    expect(error).toBeUndefined();
    expect(ofType(events, 'result')[0]).toMatchObject({ tool: 'echo_text', status: 'error', isError: true, text: expect.stringMatching(/^TOOL_CANCELLED/) });
    expect(textOf(events)).toMatch(/time limit of 200 ms.*limits\.max_duration_ms/s);
    expect(finishOf(events)).toMatchObject({ reason: 'other', turns: 1, toolCalls: 1, limit: 'duration' });
    expect(provider.requests[0]?.signal?.aborted).toBe(true);
    expect(provider.requests[0]?.ended).toBe('aborted');
  });
});

