import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toBudgetConfig } from '../../src/budgets/budget-config.js';
import { createMemoryBudgetHolds } from '../../src/budgets/budget-holds.js';
import { openBudgetLedger, type BudgetLedger, type LedgerEntry } from '../../src/budgets/budget-ledger.js';
import { createBudgets } from '../../src/budgets/budget-meter.js';
import { createBudgetUsage } from '../../src/budgets/budget-usage.js';

let dir: string;
let ledger: BudgetLedger;
let now: number;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-03-10T10:15:00Z');
const PRICES = { 'gpt-*': { input_per_mtok: 1, output_per_mtok: 1 } };
const turn = (client: string, at: number, tokens: number, usd: number): LedgerEntry => ({ at, client, input: tokens, output: 0, usd, toolCalls: 0, spawns: 0, turns: 1 });

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kiwi-usage-'));
  now = T0;
  ledger = await openBudgetLedger({ dir, retainMs: DAY, now: () => now });
});
afterEach(async () => {
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('budget usage', () => {
  it('totals a client over its budget window, with the limits, what running requests hold and what is left', async () => {
    const config = toBudgetConfig(PRICES, { clients: { ci: { spend_usd: 2, tokens: 1_000_000, tool_calls: 10, window: '1h' } } }, undefined);
    const holds = createMemoryBudgetHolds({ ttlMs: HOUR, now: () => now });
    ledger.record(turn('ci', T0 - HOUR, 500_000, 0.5)); // the hour before: outside the 1h window
    ledger.record(turn('ci', T0, 200_000, 0.2));
    ledger.record({ ...turn('ci', T0, 0, 0), toolCalls: 3, turns: 0 });
    // A request still running holds its cap against the budget.
    const meter = await createBudgets({ config, ledger, holds, now: () => now }).admit({ client: 'ci', model: 'gpt-4o', cap: { inputTokens: 100_000, outputTokens: 0 } });

    const usage = createBudgetUsage({ config, ledger, holds, retainMs: DAY, now: () => now });
    const ci = await usage.of('ci');
    expect(ci).toMatchObject({ client: 'ci', window: '1h', since: Date.parse('2026-03-10T10:00:00Z'), used: { tokens: 200_000, toolCalls: 3, turns: 1 }, held: { tokens: 100_000 } });
    expect(ci.used.spendUsd).toBeCloseTo(0.2, 10);
    expect(ci.budget).toMatchObject({ field: 'budgets.clients.ci', window: '1h', resetsAt: Date.parse('2026-03-10T11:00:00Z'), limits: { spendUsd: 2, tokens: 1_000_000, toolCalls: 10 }, left: { tokens: 700_000, toolCalls: 7 } });
    expect(ci.budget?.left.spendUsd).toBeCloseTo(1.7, 10);
    expect(ci.budget?.reached).toBeUndefined();
    await meter.end();
    expect((await usage.of('ci')).held).toEqual({ tokens: 0, spendUsd: 0 });

    // Another window: the totals are over it, the budget stays over its own.
    const day = await usage.of('ci', '1d');
    expect(day).toMatchObject({ window: '1d', since: Date.parse('2026-03-10T00:00:00Z'), used: { tokens: 700_000 }, budget: { window: '1h', used: { tokens: 200_000 } } });
  });

  it('says which limit was reached, and shows nothing left of it', async () => {
    const config = toBudgetConfig(PRICES, { default: { tool_calls: 2 } }, undefined);
    ledger.record({ ...turn('bot', T0, 0, 0), toolCalls: 2, turns: 0 });
    const usage = createBudgetUsage({ config, ledger, holds: createMemoryBudgetHolds({ ttlMs: HOUR }), retainMs: DAY, now: () => now });
    expect((await usage.of('bot')).budget).toMatchObject({ field: 'budgets.default', window: '1d', left: { toolCalls: 0 }, reached: { resource: 'tool_calls', used: 2, limit: 2 } });
  });

  it('lists the clients with a budget and those the ledger saw in the window; a client without a budget has none', async () => {
    const config = toBudgetConfig(PRICES, { clients: { ci: { spend_usd: 1 } } }, undefined);
    ledger.record(turn('local', T0, 10, 0));
    ledger.record(turn('old', T0 - 3 * HOUR, 10, 0));
    const usage = createBudgetUsage({ config, ledger, holds: createMemoryBudgetHolds({ ttlMs: HOUR }), retainMs: DAY, now: () => now });
    expect(await usage.clients(T0 - HOUR)).toEqual(['ci', 'local']);
    expect(await usage.clients(T0 - DAY)).toEqual(['ci', 'local', 'old']);
    const local = await usage.of('local');
    expect(local).toMatchObject({ window: '1d', used: { tokens: 10 } });
    expect(local.budget).toBeUndefined();
  });

  it('refuses a window it cannot total, saying what it can', async () => {
    const usage = createBudgetUsage({ config: toBudgetConfig(PRICES, undefined, undefined), ledger, holds: createMemoryBudgetHolds({ ttlMs: HOUR }), retainMs: DAY, now: () => now });
    expect(usage.windowMs('2h')).toBe(2 * HOUR);
    expect(() => usage.windowMs('2d')).toThrow(/longer than the ledger keeps/);
    await expect(usage.of('ci', '7d')).rejects.toThrow(/window 7d is longer than the ledger keeps \(24h/);
    await expect(usage.of('ci', 'week')).rejects.toThrow(/window "week" is not a number of hours or days/);
    await expect(usage.of('ci', '0h')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
