import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openBudgetLedger, type LedgerEntry } from '../../src/budgets/budget-ledger.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kiwi-ledger-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const DAY = 24 * 3_600_000;
const T0 = Date.parse('2026-03-10T10:15:00Z');
const turn = (client: string, at: number, input: number, output: number, usd?: number): LedgerEntry => ({ at, client, input, output, ...(usd === undefined ? {} : { usd }), toolCalls: 0, spawns: 0, turns: 1 });

describe('the budget ledger', () => {
  it('totals each client from an hour on, and a reopened ledger reads the same totals back', async () => {
    let now = T0;
    const ledger = await openBudgetLedger({ dir, retainMs: DAY, now: () => now });
    ledger.record(turn('ci', T0 - 2 * 3_600_000, 100, 50, 0.5));
    ledger.record(turn('ci', T0, 10, 5, 0.25));
    ledger.record({ ...turn('ci', T0, 0, 0), toolCalls: 1, turns: 0 });
    ledger.record(turn('other', T0, 1000, 0));
    expect(ledger.totals({ client: 'ci' }, T0)).toEqual({ tokens: 15, spendUsd: 0.25, unpricedTokens: 0, estimatedTokens: 0, estimatedUsd: 0, toolCalls: 1, spawns: 0, turns: 1 });
    expect(ledger.totals({ client: 'ci' }, T0 - DAY)).toMatchObject({ tokens: 165, spendUsd: 0.75 });
    expect(ledger.totals({ client: 'other' }, T0)).toMatchObject({ tokens: 1000, spendUsd: 0, unpricedTokens: 1000 });
    await ledger.close();

    now = T0 + 60_000;
    const reopened = await openBudgetLedger({ dir, retainMs: DAY, now: () => now });
    expect(reopened.totals({ client: 'ci' }, T0 - DAY)).toEqual(ledger.totals({ client: 'ci' }, T0 - DAY));
    expect(reopened.totals({ client: 'other' }, T0)).toMatchObject({ tokens: 1000, unpricedTokens: 1000 });
    expect(readdirSync(dir)).toEqual(['2026-03-10.jsonl']);
  });

  it('writes every record, those made while a write is under way in the next one, in order', async () => {
    const ledger = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    for (let i = 0; i < 300; i++) {
      ledger.record(turn('ci', T0, i, 0, 0));
      if (i % 7 === 0) await Promise.resolve();
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await ledger.close();
    const ins = readFileSync(path.join(dir, '2026-03-10.jsonl'), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { in: number }).in);
    expect(ins).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });

  it('catches up on lines another process appended, and never counts its own twice', async () => {
    const a = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    const b = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    a.record(turn('ci', T0, 10, 0, 1));
    b.record(turn('ci', T0, 20, 0, 2));
    await Promise.all([a.flush(), b.flush()]);
    expect(a.totals({ client: 'ci' }, T0).spendUsd).toBe(1);
    await a.refresh();
    await b.refresh();
    await a.refresh();
    expect(a.totals({ client: 'ci' }, T0)).toMatchObject({ tokens: 30, spendUsd: 3 });
    expect(b.totals({ client: 'ci' }, T0)).toMatchObject({ tokens: 30, spendUsd: 3 });
  });

  it('reads no torn line (a crash mid-write) as a record, and writes its next line on a line of its own', async () => {
    const first = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    first.record(turn('ci', T0, 10, 0, 1));
    await first.close();
    const file = path.join(dir, '2026-03-10.jsonl');
    appendFileSync(file, '{"w":"crashed","at":1,"client":"ci","in":99');
    const second = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    expect(second.totals({ client: 'ci' }, T0)).toMatchObject({ tokens: 10, spendUsd: 1 });
    second.record(turn('ci', T0, 5, 0, 1));
    await second.close();
    const third = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    expect(third.totals({ client: 'ci' }, T0)).toMatchObject({ tokens: 15, spendUsd: 2 });
    expect(readFileSync(file, 'utf8').split('\n').filter((l) => l !== '')).toHaveLength(3);
  });

  it('does not read day files older than it must keep, and skips lines that are not records', async () => {
    writeFileSync(path.join(dir, '2026-01-01.jsonl'), `${JSON.stringify({ w: 'x', at: Date.parse('2026-01-01T00:00:00Z'), client: 'ci', in: 5, out: 0, usd: 9, calls: 0, spawns: 0, turns: 1 })}\n`);
    writeFileSync(path.join(dir, '2026-03-10.jsonl'), `not json\n{"w":"x","client":"ci"}\n${JSON.stringify({ w: 'x', at: T0, client: 'ci', in: 7, out: 0, calls: 0, spawns: 0, turns: 1 })}\n`);
    const ledger = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    expect(ledger.totals({ client: 'ci' }, 0)).toMatchObject({ tokens: 7, spendUsd: 0, unpricedTokens: 7 });
  });

  it('totals a directive run under its id, beside its client', async () => {
    const ledger = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    ledger.record({ ...turn('ci', T0, 10, 10, 0.1), directive: 'deploy_staging', run: 'run-1' });
    ledger.record({ ...turn('ci', T0, 0, 0), spawns: 1, turns: 0, directive: 'deploy_staging', run: 'run-1' });
    await ledger.close();
    const reopened = await openBudgetLedger({ dir, retainMs: DAY, now: () => T0 });
    expect(reopened.totals({ run: 'run-1' }, 0)).toMatchObject({ tokens: 20, spendUsd: 0.1, spawns: 1, turns: 1 });
    expect(reopened.totals({ client: 'ci' }, T0)).toMatchObject({ tokens: 20, spawns: 1 });
    expect(reopened.totals({ run: 'run-2' }, 0).tokens).toBe(0);
  });
});
