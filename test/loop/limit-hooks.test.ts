import { describe, expect, it } from 'vitest';
import { withLimitHooks } from '../../src/loop/limit-hooks.js';
import type { LoopEvent } from '../../src/loop/loop-types.js';

async function* events(...list: LoopEvent[]): AsyncGenerator<LoopEvent> {
  for (const e of list) yield e;
}

describe('the limit event of a chat request', () => {
  it('fires once when the request ends on a limit, passes every event on, and logs what the hooks noted', async () => {
    const fired: [string, Record<string, unknown>][] = [];
    const log: string[] = [];
    const finish: LoopEvent = { type: 'finish', reason: 'stop', usage: { inputTokens: 10 }, turns: 8, toolCalls: 3, limit: 'turns' };
    const out: LoopEvent[] = [];
    for await (const e of withLimitHooks(events({ type: 'text', text: 'hi' }, finish), async (code, detail) => (fired.push([code, detail]), { notes: ['webhook sent to hooks.example'], directives: [] }), (l) => log.push(l))) out.push(e);
    expect(out.map((e) => e.type)).toEqual(['text', 'finish']);
    expect(fired).toEqual([['turns', { turns: 8, tool_calls: 3, usage: { inputTokens: 10 } }]]);
    await expect.poll(() => log).toEqual(['hooks on the turns limit: webhook sent to hooks.example']);
  });

  it('fires nothing when the request ends without a limit', async () => {
    let calls = 0;
    for await (const e of withLimitHooks(events({ type: 'finish', reason: 'stop', usage: {}, turns: 1, toolCalls: 0 }), async () => (calls++, { notes: [], directives: [] }), undefined)) void e;
    expect(calls).toBe(0);
  });
});
