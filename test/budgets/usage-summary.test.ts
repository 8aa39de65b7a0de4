import { describe, expect, it } from 'vitest';
import { addUsage, createUsageTally, parseUsage, usageText, withChildren } from '../../src/budgets/usage-summary.js';
import { countingBudget } from '../../src/budgets/counting-budget.js';
import type { BudgetStop } from '../../src/budgets/budget-types.js';

/** $1 and $2 per million tokens in and out for gpt-*, nothing known of any other model. */
const priceOf = (model: string) => (model.startsWith('gpt-') ? { inputPerMtok: 1, outputPerMtok: 2 } : undefined);

describe('usage summaries', () => {
  it('adds turns by model, prices the priced ones, and says "unpriced" of the rest, leaving them out of the total', () => {
    const tally = createUsageTally(priceOf);
    tally.add('gpt-4o', { inputTokens: 1_000_000, outputTokens: 500_000 });
    tally.add('gpt-4o', { inputTokens: 1_000_000, outputTokens: 0, estimated: true });
    tally.add('llama', { inputTokens: 7, outputTokens: 3 });
    expect(tally.summary()).toEqual({
      models: { 'gpt-4o': { input_tokens: 2_000_000, output_tokens: 500_000, estimated: true, spend_usd: 3 }, llama: { input_tokens: 7, output_tokens: 3, spend_usd: 'unpriced' } },
      spend_usd: 3,
      unpriced: ['llama'],
      estimated: true,
    });
  });

  it('counts nothing for a call that reported no tokens (a fallback model that refused), and an empty run says so', () => {
    const tally = createUsageTally(priceOf);
    tally.add('gpt-4o', undefined);
    tally.add('gpt-4o', {});
    expect(tally.summary()).toEqual({ models: {}, spend_usd: 0 });
    expect(usageText(tally.summary())).toBe('no model tokens');
  });

  it('sums runs model by model; a model unpriced in either stays unpriced', () => {
    const a = createUsageTally(priceOf);
    a.add('gpt-4o', { inputTokens: 10, outputTokens: 10 });
    a.add('llama', { inputTokens: 1, outputTokens: 1 });
    const b = createUsageTally(() => undefined);
    b.add('gpt-4o', { inputTokens: 5, outputTokens: 0 });
    expect(addUsage(a.summary(), b.summary())).toEqual({
      models: { 'gpt-4o': { input_tokens: 15, output_tokens: 10, spend_usd: 'unpriced' }, llama: { input_tokens: 1, output_tokens: 1, spend_usd: 'unpriced' } },
      spend_usd: 0,
      unpriced: ['gpt-4o', 'llama'],
    });
  });

  it('a thread with children says own + children; without any, it is its own', () => {
    const own = createUsageTally(priceOf);
    own.add('gpt-4o', { inputTokens: 1_000_000, outputTokens: 0 });
    const child = createUsageTally(priceOf);
    child.add('gpt-4o-mini', { inputTokens: 0, outputTokens: 1_000_000 });
    const empty = createUsageTally(priceOf).summary();
    expect(withChildren(own.summary(), empty)).toEqual(own.summary());
    const both = withChildren(own.summary(), child.summary());
    expect(both).toMatchObject({ spend_usd: 3, own: { spend_usd: 1 }, children: { spend_usd: 2 } });
    expect(usageText(both)).toBe('gpt-4o 1000000 in / 0 out $1.0000; gpt-4o-mini 0 in / 1000000 out $2.0000; total $3.0000 (own + children)');
  });

  it('reads back only a summary: anything else stored is no usage', () => {
    const tally = createUsageTally(priceOf);
    tally.add('gpt-4o', { inputTokens: 3, outputTokens: 4 });
    expect(parseUsage(JSON.parse(JSON.stringify(tally.summary())))).toEqual(tally.summary());
    for (const bad of [undefined, null, 'x', { models: {} }, { models: { m: { input_tokens: -1, output_tokens: 0, spend_usd: 0 } }, spend_usd: 0 }, { models: { m: { input_tokens: 1, output_tokens: 0, spend_usd: 'free' } }, spend_usd: 0 }]) {
      expect(parseUsage(bad)).toBeUndefined();
    }
  });
});

describe('the counting budget', () => {
  it('tells every charge, and passes charges, tool calls and a spent budget on to the budget it wraps', () => {
    const seen: unknown[] = [];
    const inner = { charged: 0, calls: 0, stop: undefined as BudgetStop | undefined };
    const budget = countingBudget({ charge: () => inner.charged++, countToolCall: () => inner.calls++, exhausted: () => inner.stop }, (u) => seen.push(u));
    budget.charge({ inputTokens: 1 });
    budget.countToolCall();
    expect([seen, inner.charged, inner.calls, budget.exhausted()]).toEqual([[{ inputTokens: 1 }], 1, 1, undefined]);
    inner.stop = { scope: 'request', name: 'request', resource: 'spend', used: 1, limit: 1 };
    expect(budget.exhausted()).toBe(inner.stop);
    // Without one, charges are still told, and no budget ever runs out.
    const alone = countingBudget(undefined, (u) => seen.push(u));
    alone.charge({ outputTokens: 2 });
    alone.countToolCall();
    expect([seen.at(-1), alone.exhausted()]).toEqual([{ outputTokens: 2 }, undefined]);
  });
});
