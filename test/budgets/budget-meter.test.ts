import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toBudgetConfig } from '../../src/budgets/budget-config.js';
import { openBudgetLedger, type BudgetLedger } from '../../src/budgets/budget-ledger.js';
import { createMemoryBudgetHolds } from '../../src/budgets/budget-holds.js';
import { createBudgets } from '../../src/budgets/budget-meter.js';
import { directiveBudgetLimits } from '../../src/budgets/directive-limits.js';
import { isKiwiError, KiwiError } from '../../src/base/errors.js';
import { parseDirective } from '../../src/registry/directive-parser.js';

let dir: string;
let ledger: BudgetLedger;
let now: number;
const T0 = Date.parse('2026-03-10T10:15:00Z');
const HOUR = 3_600_000;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kiwi-meter-'));
  now = T0;
  ledger = await openBudgetLedger({ dir, retainMs: 24 * HOUR, now: () => now });
});
afterEach(async () => {
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

const PRICES = { 'gpt-4o-mini': { input_per_mtok: 0.15, output_per_mtok: 0.6 }, 'gpt-*': { input_per_mtok: 2.5, output_per_mtok: 10 } };

async function refusal(promise: Promise<unknown>): Promise<KiwiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isKiwiError(error)) throw new Error(`expected a KiwiError, got ${String(error)}`);
  return error;
}

describe('budgets', () => {
  it("charges a side request (the resolver's fallback model) to the client: its tokens and spend, priced as the model it asked, not a turn", async () => {
    const budgets = createBudgets({ config: toBudgetConfig(PRICES, { clients: { ci: { tokens: 1000, window: '1h' } } }, undefined), ledger, now: () => now });
    const meter = await budgets.admit({ client: 'ci', model: 'gpt-4o-mini' });
    meter.chargeSide({ inputTokens: 300, outputTokens: 20 }); // the request's own model
    meter.chargeSide({ inputTokens: 100, outputTokens: 0, estimated: true }, 'gpt-4o'); // another, at gpt-*'s price
    const totals = ledger.totals({ client: 'ci' }, T0);
    expect(totals).toMatchObject({ tokens: 420, turns: 0, estimatedTokens: 100 });
    expect(totals.spendUsd).toBeCloseTo((300 * 0.15 + 20 * 0.6 + 100 * 2.5) / 1e6, 12);
    meter.chargeSide({ inputTokens: 580, outputTokens: 0 });
    expect(meter.exhausted()).toMatchObject({ scope: 'client', name: 'ci', resource: 'tokens', limit: 1000 });
    await meter.end();
    await ledger.flush();
    const lines = readFileSync(path.join(dir, readdirSync(dir).find((f) => f.endsWith('.jsonl')) ?? ''), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { model: string; turns: number });
    expect(lines.map((l) => [l.model, l.turns])).toEqual([['gpt-4o-mini', 0], ['gpt-4o', 0], ['gpt-4o-mini', 0]]);
  });

  it('prices each turn from the table (an exact id before a glob) and ends the client at its spend budget, 429 until its window starts afresh', async () => {
    const budgets = createBudgets({ config: toBudgetConfig(PRICES, { clients: { ci: { spend_usd: 1, window: '1h' } } }, undefined), ledger, now: () => now });
    const meter = await budgets.admit({ client: 'ci', model: 'gpt-4o-mini' });
    meter.charge({ inputTokens: 1_000_000, outputTokens: 1_000_000 });
    expect(ledger.totals({ client: 'ci' }, T0).spendUsd).toBeCloseTo(0.75, 10);
    expect(meter.exhausted()).toBeUndefined();
    const glob = await budgets.admit({ client: 'ci', model: 'gpt-4o' });
    glob.charge({ inputTokens: 100_000, outputTokens: 0 }); // $0.25 at gpt-*'s price
    expect(meter.exhausted()).toMatchObject({ scope: 'client', name: 'ci', resource: 'spend', limit: 1, window: '1h', resetsAt: Date.parse('2026-03-10T11:00:00Z'), field: 'budgets.clients.ci' });

    const error = await refusal(budgets.admit({ client: 'ci', model: 'gpt-4o-mini' }));
    expect(error.code).toBe('BUDGET_EXCEEDED');
    expect(error.message).toBe('Client "ci" is over its spend budget: $1.00 of $1.00 in its 1h window; it starts afresh at 2026-03-10T11:00:00.000Z (in 2700 s). To allow more, raise `budgets.clients.ci.spend_usd` in .ai/config/gateway.yaml.');
    expect(error.details).toMatchObject({ retryAfter: '2700', budget: { resource: 'spend', used: 1 } });
    // Another client has its own budget (here none); the next window starts at zero.
    await expect(budgets.admit({ client: 'other', model: 'gpt-4o-mini' })).resolves.toBeDefined();
    now = Date.parse('2026-03-10T11:00:00Z');
    await expect(budgets.admit({ client: 'ci', model: 'gpt-4o-mini' })).resolves.toBeDefined();
  });

  it('counts tokens and tool calls against the default budget of clients without their own', async () => {
    const budgets = createBudgets({ config: toBudgetConfig(undefined, { default: { tokens: 100, tool_calls: 2 }, clients: { free: {} } }, undefined), ledger, now: () => now });
    const meter = await budgets.admit({ client: 'a', model: 'local-model' });
    meter.countToolCall();
    meter.countToolCall();
    expect(meter.exhausted()).toMatchObject({ scope: 'client', resource: 'tool_calls', used: 2, limit: 2, window: '1d', field: 'budgets.default' });
    const b = await budgets.admit({ client: 'b', model: 'local-model' });
    b.charge({ inputTokens: 60, outputTokens: 40 });
    expect((await refusal(budgets.admit({ client: 'b', model: 'local-model' }))).message).toMatch(/^Client "b" is over its token budget: 100 tokens of 100 tokens in its 1d window; .*raise `budgets\.default\.tokens`/);
    // An entry of its own with no limits: no budget at all.
    const free = await budgets.admit({ client: 'free', model: 'local-model' });
    free.charge({ inputTokens: 10_000 });
    expect(free.exhausted()).toBeUndefined();
  });

  it('refuses a model with no price while a spend budget counts it, and counts its tokens when none does', async () => {
    const budgets = createBudgets({ config: toBudgetConfig(PRICES, { clients: { ci: { spend_usd: 5 }, tokens_only: { tokens: 1000 } } }, undefined), ledger, now: () => now });
    const error = await refusal(budgets.admit({ client: 'ci', model: 'claude-sonnet-4' }));
    expect(error.code).toBe('POLICY_DENIED');
    expect(error.message).toContain('Model "claude-sonnet-4" has no price in `prices` of .ai/config/gateway.yaml, and client "ci" has a spend budget');
    await expect(budgets.admit({ client: 'ci', model: 'kiwi-demo', free: true })).resolves.toBeDefined();
    const meter = await budgets.admit({ client: 'tokens_only', model: 'claude-sonnet-4' });
    meter.charge({ inputTokens: 300, outputTokens: 200 });
    expect(ledger.totals({ client: 'tokens_only' }, T0)).toMatchObject({ tokens: 500, spendUsd: 0, unpricedTokens: 500 });
  });

  it("ends one request at limits.max_spend_usd, without touching the client's next one", async () => {
    const budgets = createBudgets({ config: toBudgetConfig(PRICES, undefined, 0.01), ledger, now: () => now });
    const meter = await budgets.admit({ client: 'local', model: 'gpt-4o-mini' });
    meter.charge({ inputTokens: 50_000, outputTokens: 0 }); // $0.0075
    expect(meter.exhausted()).toBeUndefined();
    meter.charge({ inputTokens: 50_000, outputTokens: 0 });
    expect(meter.exhausted()).toEqual({ scope: 'request', name: 'request', resource: 'spend', used: 0.015, limit: 0.01 });
    const next = await budgets.admit({ client: 'local', model: 'gpt-4o-mini' });
    expect(next.exhausted()).toBeUndefined();
    expect((await refusal(budgets.admit({ client: 'local', model: 'unpriced' }))).message).toContain('every request has (limits.max_spend_usd) a spend budget');
  });

  it("keeps a directive run to its <limits> (Kiwi's child elements or attributes) through the same ledger, across a restart", async () => {
    const text = (limits: string) => `<directive name="deploy_staging" version="1.0.0">\n<metadata>\n<description>Deploy</description>\n${limits}\n</metadata>\n</directive>\n`;
    const parsed = parseDirective(text('<limits>\n<turns>3</turns>\n<tokens>1000</tokens>\n<spawns>1</spawns>\n<duration>60</duration>\n<spend currency="USD">0.50</spend>\n</limits>'), { file: '/p/d.md', display: 'd.md' }, 'project');
    if (!parsed.ok) throw new Error(parsed.issues.map((i) => i.message).join('\n'));
    const limits = directiveBudgetLimits(parsed.value.limits);
    expect(limits).toEqual({ turns: 3, tokens: 1000, spawns: 1, durationMs: 60_000, spendUsd: 0.5 });
    const attrs = parseDirective(text('<limits turns="3" tokens="1000" spawns="1" duration="1m" spend="0.50"/>'), { file: '/p/d.md', display: 'd.md' }, 'project');
    expect(attrs.ok && directiveBudgetLimits(attrs.value.limits)).toEqual(limits);

    const config = toBudgetConfig(PRICES, undefined, undefined);
    const run = { directive: 'deploy_staging', run: 'run-7', limits, startedAt: T0 };
    const meter = await createBudgets({ config, ledger, now: () => now }).admit({ client: 'ci', model: 'gpt-4o-mini', directive: run });
    meter.charge({ inputTokens: 400, outputTokens: 100 });
    meter.countSpawn();
    // One spawn of one allowed: the run goes on (the limit stops the next spawn); a second is over it.
    expect(meter.exhausted()).toBeUndefined();
    meter.countSpawn();
    expect(meter.exhausted()).toMatchObject({ scope: 'directive', name: 'deploy_staging', resource: 'spawns', used: 2, limit: 1 });
    await ledger.close();

    // A restarted gateway sees the run's use; a spend or time past its limits refuses its next request.
    ledger = await openBudgetLedger({ dir, retainMs: 24 * HOUR, now: () => now });
    const budgets = createBudgets({ config, ledger, now: () => now });
    const error = await refusal(budgets.admit({ client: 'ci', model: 'gpt-4o-mini', directive: run }));
    expect(error.message).toBe('Directive deploy_staging is over its spawn budget: 2 spawns of 1 spawn. To allow more, raise spawns in the <limits> of directive deploy_staging.');
    const late = await refusal(budgets.admit({ client: 'ci', model: 'gpt-4o-mini', directive: { ...run, run: 'run-8', startedAt: T0 - 61_000 } }));
    expect(late.details).toMatchObject({ budget: { resource: 'duration', limit: 60_000 } });
    expect(late.details?.['retryAfter']).toBeUndefined();
  });

  it("holds each running request's cap: of requests sent in parallel at most one overshoots, and a hold ends with its request", async () => {
    const budgets = createBudgets({ config: toBudgetConfig(PRICES, { clients: { ci: { tokens: 1000 } } }, undefined), ledger, now: () => now });
    const cap = { inputTokens: 100, outputTokens: 200 };
    // Nothing is charged yet: without holds all five would be admitted.
    const running = [];
    for (let i = 0; i < 4; i++) running.push(await budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap }));
    const refused = await refusal(budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap }));
    expect(refused.code).toBe('BUDGET_EXCEEDED');
    expect(refused.message).toBe('Client "ci" is over its token budget: 0 tokens, and 1200 tokens held by requests still running, of 1000 tokens in its 1d window; retry when they end. To allow more, raise `budgets.clients.ci.tokens` in .ai/config/gateway.yaml.');
    expect(refused.details?.['retryAfter']).toBeUndefined();
    // A charge replaces that much of its hold; an end releases the rest (and a second end does nothing).
    const [a, b, c, d] = running as [NonNullable<(typeof running)[0]>, NonNullable<(typeof running)[0]>, NonNullable<(typeof running)[0]>, NonNullable<(typeof running)[0]>];
    a.charge({ inputTokens: 100, outputTokens: 150 });
    a.end();
    a.end();
    await expect(budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap })).rejects.toThrow(/250 tokens, and 900 tokens held/);
    b.end(); // failed before any turn: nothing charged, nothing held
    const e = await budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap });
    for (const m of [c, d, e]) {
      m.charge({ inputTokens: 100, outputTokens: 200 });
      m.end();
    }
    // 250 + 3 × 300: over the budget by less than one request's cap.
    expect(ledger.totals({ client: 'ci' }, T0).tokens).toBe(1150);
    expect((await refusal(budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap }))).message).toMatch(/^Client "ci" is over its token budget: 1150 tokens of 1000 tokens in its 1d window; it starts afresh/);
  });

  it('holds spend at the priced cap, at most limits.max_spend_usd, and lets a hold that was never ended lapse', async () => {
    const holds = createMemoryBudgetHolds({ ttlMs: 60_000, now: () => now });
    const budgets = createBudgets({ config: toBudgetConfig(PRICES, { clients: { ci: { spend_usd: 1 } } }, 0.4), ledger, holds, now: () => now });
    // 1M tokens of gpt-4o-mini output would be $0.60; the request stops at $0.40, so that is held.
    await budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap: { inputTokens: 0, outputTokens: 1_000_000 } });
    expect(await holds.held('client:ci')).toEqual({ tokens: 1_000_000, spendUsd: 0.4 });
    await budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap: { inputTokens: 0, outputTokens: 1_000_000 } });
    await budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap: { inputTokens: 0, outputTokens: 1_000_000 } });
    expect((await refusal(budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap: { outputTokens: 10 } }))).message).toContain('over its spend budget: $0.00, and $1.20 held by requests still running, of $1.00 in its 1d window; retry when they end.');
    // Neither ever ended (a handler that died past its finally): their holds lapse, the client is not blocked for good.
    now += 60_000;
    await expect(budgets.admit({ client: 'ci', model: 'gpt-4o-mini', cap: { outputTokens: 10 } })).resolves.toBeDefined();
    expect((await holds.held('client:ci')).tokens).toBe(10);
  });

  it('labels an estimated charge in the ledger and says how much of a spent budget was estimated', async () => {
    const budgets = createBudgets({ config: toBudgetConfig(PRICES, { clients: { ci: { tokens: 100 } } }, undefined), ledger, now: () => now });
    const meter = await budgets.admit({ client: 'ci', model: 'gpt-4o-mini' });
    meter.charge({ inputTokens: 10, outputTokens: 5 });
    meter.charge({ inputTokens: 60, outputTokens: 40, estimated: true });
    meter.end();
    expect(ledger.totals({ client: 'ci' }, T0)).toMatchObject({ tokens: 115, estimatedTokens: 100 });
    expect(meter.exhausted()).toMatchObject({ resource: 'tokens', used: 115, estimated: 100 });
    expect((await refusal(budgets.admit({ client: 'ci', model: 'gpt-4o-mini' }))).message).toMatch(/^Client "ci" is over its token budget: 115 tokens \(100 of them estimated\) of 100 tokens in its 1d window/);
    await ledger.flush();
    const lines = readFileSync(path.join(dir, '2026-03-10.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l['estimated'])).toEqual([undefined, true]);
    // Read back after a restart, the estimate is still labelled.
    await ledger.close();
    ledger = await openBudgetLedger({ dir, retainMs: 24 * HOUR, now: () => now });
    expect(ledger.totals({ client: 'ci' }, T0)).toMatchObject({ tokens: 115, estimatedTokens: 100 });
  });
});
