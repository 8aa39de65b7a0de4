import { randomUUID } from 'node:crypto';
import { describeError, KiwiError } from '../base/errors.js';
import { createGroupCommit } from '../base/group-commit.js';
import type { SqlQueryable, SqlValue } from '../store/sql/sql-db.js';
import type { BudgetLedger, LedgerEntry } from './budget-ledger.js';
import { HOUR_MS, hourOf } from './budget-window.js';
import { addTotals } from './budget-types.js';
import { clientsOf, createHourlyTotals, ledgerKeyName } from './hourly-totals.js';

/**
 * The budget ledger in Postgres (table `budget_usage`, kernel migration 12), for gateways that
 * share a server (`DATABASE_URL`): every replica charges the same clients, so each must count
 * what the others charged.
 *
 * What this process records counts here at once and is written in group commits
 * (group-commit.ts): `record` resolves once its row is in. What others recorded is read when a
 * request is admitted (`refresh(keys)`), for the keys it needs: one query per key, summed per
 * hour by the server, of every row this process did not write. Own and others' totals are kept apart, so a row is never counted twice however a
 * write and a read interleave. A batch that cannot be written is kept and tried again (the totals
 * here already count it); past `MAX_PENDING` entries the oldest are dropped, with a message.
 */

/** Entries kept while the database does not answer; beyond it the oldest go (they still count here). */
const MAX_PENDING = 100_000;
const COLUMNS = ['writer', 'at', 'client', 'model', 'input', 'output', 'usd', 'tool_calls', 'spawns', 'turns', 'directive', 'run', 'estimated'] as const;
/** Rows per insert: 13 parameters each, under Postgres's 65 535. */
const ROWS_PER_INSERT = 1_000;

export async function openSqlBudgetLedger(options: { db: SqlQueryable; retainMs: number; now?: () => number; onError?: (message: string) => void }): Promise<BudgetLedger> {
  const { db } = options;
  const now = options.now ?? Date.now;
  const writer = randomUUID();
  const own = createHourlyTotals();
  const others = createHourlyTotals();
  let lastSweep = 0;

  const usage = (e: LedgerEntry) => ({ in: e.input, out: e.output, usd: e.usd, calls: e.toolCalls, spawns: e.spawns, turns: e.turns, ...(e.estimated === true ? { estimated: true as const } : {}) });
  const row = (e: LedgerEntry): SqlValue[] => [writer, e.at, e.client, e.model ?? null, e.input, e.output, e.usd ?? null, e.toolCalls, e.spawns, e.turns, e.directive ?? null, e.run ?? null, e.estimated === true];

  const writes = createGroupCommit<LedgerEntry>({
    what: 'record',
    store: 'Postgres',
    maxBatch: ROWS_PER_INSERT,
    maxWaiting: MAX_PENDING,
    onFailure: (message) => options.onError?.(`budget ledger: ${message}, they count here meanwhile`),
    async write(batch) {
      const values = batch.map((_, i) => `(${COLUMNS.map((__, j) => `$${i * COLUMNS.length + j + 1}`).join(', ')})`).join(', ');
      await db.query(`insert into budget_usage (${COLUMNS.join(', ')}) values ${values}`, batch.flatMap(row));
    },
  });

  /** Others' rows for one key, summed per hour by the server, in place of what was read before. */
  async function readOthers(key: string, column: 'client' | 'run', value: string, since: number): Promise<void> {
    const rows = await db.query<Record<string, string | number | null>>(
      `select (at / ${HOUR_MS}) * ${HOUR_MS} as hour,
        sum(input + output) as tokens,
        sum(coalesce(usd, 0)) as usd,
        sum(case when usd is null then input + output else 0 end) as unpriced,
        sum(case when estimated then input + output else 0 end) as estimated_tokens,
        sum(case when estimated then coalesce(usd, 0) else 0 end) as estimated_usd,
        sum(tool_calls) as tool_calls, sum(spawns) as spawns, sum(turns) as turns
      from budget_usage where ${column} = $1 and writer <> $2 and at >= $3 group by 1`,
      [value, writer, since],
    );
    others.drop(key);
    for (const r of rows) {
      others.set(key, Number(r['hour']), {
        tokens: Number(r['tokens']),
        spendUsd: Number(r['usd']),
        unpricedTokens: Number(r['unpriced']),
        estimatedTokens: Number(r['estimated_tokens']),
        estimatedUsd: Number(r['estimated_usd']),
        toolCalls: Number(r['tool_calls']),
        spawns: Number(r['spawns']),
        turns: Number(r['turns']),
      });
    }
  }

  return {
    record(entry) {
      own.add(ledgerKeyName({ client: entry.client }), entry.at, usage(entry));
      if (entry.run !== undefined) own.add(ledgerKeyName({ run: entry.run }), entry.at, usage(entry));
      return writes.add(entry);
    },
    totals(key, since) {
      const name = ledgerKeyName(key);
      return addTotals(own.sum(name, since), others.sum(name, since));
    },
    async clients(since) {
      let rows: { client: string }[];
      try {
        rows = await db.query<{ client: string }>('select distinct client from budget_usage where at >= $1', [hourOf(since)]);
      } catch (error) {
        throw new KiwiError('UNAVAILABLE', `the budget ledger in Postgres did not answer (${describeError(error)}); try again once it does`, { cause: error });
      }
      // Its own records not yet written count here already.
      return [...new Set([...clientsOf(own.keys(since)), ...rows.map((r) => r.client)])];
    },
    async refresh(keys = []) {
      const since = hourOf(now() - options.retainMs);
      try {
        for (const key of keys) await ('client' in key ? readOthers(ledgerKeyName(key), 'client', key.client, since) : readOthers(ledgerKeyName(key), 'run', key.run, since));
        // Old rows go now and then; any replica may do it.
        if (now() - lastSweep > HOUR_MS) {
          lastSweep = now();
          await db.query('delete from budget_usage where at < $1', [since - 24 * HOUR_MS]);
        }
      } catch (error) {
        throw new KiwiError('UNAVAILABLE', `the budget ledger in Postgres did not answer (${describeError(error)}); requests under a budget are refused until it does`, { cause: error });
      }
      own.prune(hourOf(now() - options.retainMs - HOUR_MS));
    },
    flush: () => writes.idle(),
    async close() {
      // What still fails is lost to the other replicas (and said so).
      const left = await writes.close();
      if (left > 0) options.onError?.(`budget ledger: ${left} record(s) could not be written to Postgres before closing`);
    },
  };
}
