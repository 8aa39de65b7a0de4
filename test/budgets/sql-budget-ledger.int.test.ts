import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetLedger, LedgerEntry } from '../../src/budgets/budget-ledger.js';
import { HOUR_MS } from '../../src/budgets/budget-window.js';
import { openSqlBudgetLedger } from '../../src/budgets/sql-budget-ledger.js';
import { isKiwiError } from '../../src/base/errors.js';
import { openPostgresDb } from '../../src/store/sql/postgres-db.js';
import type { SqlDb, SqlQueryable } from '../../src/store/sql/sql-db.js';
import { postgresAvailable, type PostgresServer } from '../helpers/postgres-server.js';
import { postgresDatabase } from '../helpers/run-resources.js';

/** Two ledgers on one Postgres database stand for two gateways sharing a server (DATABASE_URL). */
describe.skipIf(!postgresAvailable())('the budget ledger in Postgres', () => {
  let server: PostgresServer;
  let db: SqlDb;
  const opened: BudgetLedger[] = [];
  const T = Date.UTC(2026, 10, 28, 10, 30);
  let clock = T;
  const open = async (queryable: SqlQueryable = db, onError?: (m: string) => void): Promise<BudgetLedger> => {
    const ledger = await openSqlBudgetLedger({ db: queryable, retainMs: 24 * HOUR_MS, now: () => clock, ...(onError ? { onError } : {}) });
    opened.push(ledger);
    return ledger;
  };
  const turn = (client: string, fields: Partial<LedgerEntry> = {}): LedgerEntry => ({ at: clock, client, model: 'gpt-4o', input: 100, output: 50, usd: 0.01, toolCalls: 0, spawns: 0, turns: 1, ...fields });

  beforeAll(async () => {
    server = await postgresDatabase();
    db = await openPostgresDb(server.url, { maxConnections: 4 });
  });
  afterAll(async () => {
    for (const ledger of opened) await ledger.close();
    await db?.close();
    await server?.stop();
  });

  it('counts what another gateway charged once it looks, and never counts a charge twice', async () => {
    const [a, b] = [await open(), await open()];
    a.record(turn('alice'));
    a.record(turn('alice', { input: 10, output: 0, usd: undefined, estimated: true }));
    b.record(turn('alice', { toolCalls: 1, input: 0, output: 0, usd: 0, turns: 0 }));
    await Promise.all([a.flush(), b.flush()]);
    // Before b looks, it knows only its own.
    expect(b.totals({ client: 'alice' }, T)).toMatchObject({ tokens: 0, toolCalls: 1 });
    for (let i = 0; i < 3; i++) {
      await b.refresh([{ client: 'alice' }]);
      await a.refresh([{ client: 'alice' }]);
    }
    const expected = { tokens: 160, spendUsd: 0.01, unpricedTokens: 10, estimatedTokens: 10, estimatedUsd: 0, toolCalls: 1, turns: 2 };
    expect(a.totals({ client: 'alice' }, T)).toMatchObject(expected);
    expect(b.totals({ client: 'alice' }, T)).toMatchObject(expected);
    expect(b.totals({ client: 'bob' }, T).tokens).toBe(0);
    // Every client that used something, whichever gateway wrote it, and one not yet written.
    a.record(turn('dave'));
    b.record(turn('erin', { at: T - 2 * HOUR_MS }));
    await b.flush();
    expect(await b.clients(T)).toEqual(expect.arrayContaining(['alice']));
    expect(await a.clients(T)).toEqual(expect.arrayContaining(['alice', 'dave']));
    expect(await a.clients(T)).not.toContain('erin');
    expect(await a.clients(T - 2 * HOUR_MS)).toContain('erin');
  });

  it('totals a directive run across gateways, and only from the hour asked', async () => {
    const [a, b] = [await open(), await open()];
    a.record(turn('carol', { run: 'run-1', directive: 'deploy', at: T - 2 * HOUR_MS }));
    a.record(turn('carol', { run: 'run-1', directive: 'deploy' }));
    await a.flush();
    await b.refresh([{ run: 'run-1' }]);
    expect(b.totals({ run: 'run-1' }, 0).turns).toBe(2);
    expect(b.totals({ run: 'run-1' }, T).turns).toBe(1);
  });

  it('keeps charges Postgres refused and writes them once it answers; a look that fails refuses, saying why', async () => {
    let down = true;
    const flaky: SqlQueryable = { query: (sql, params) => (down ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')) : db.query(sql, params)) };
    const messages: string[] = [];
    const a = await open(flaky, (m) => messages.push(m));
    a.record(turn('dave'));
    await a.flush();
    expect(messages).toEqual([expect.stringMatching(/could not write 1 record\(s\) to Postgres \(connect ECONNREFUSED.*trying again every second/)]);
    expect(a.totals({ client: 'dave' }, T).tokens).toBe(150);
    const error = await a.refresh([{ client: 'dave' }]).catch((e: unknown) => e);
    expect(isKiwiError(error, 'UNAVAILABLE')).toBe(true);
    expect((error as Error).message).toMatch(/^the budget ledger in Postgres did not answer .*requests under a budget are refused until it does$/);
    down = false;
    const b = await open();
    await expect.poll(async () => (await b.refresh([{ client: 'dave' }]), b.totals({ client: 'dave' }, T).tokens), { timeout: 5000 }).toBe(150);
    expect(messages).toHaveLength(1);
  });
});
