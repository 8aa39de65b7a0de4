import { describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { createSqlAuditLog } from '../../src/audit/sql-audit-log.js';
import { readSqlAuditTail } from '../../src/audit/sql-audit-reader.js';
import { runCli } from '../../src/app/run-cli.js';
import { createRetention } from '../../src/kernel/kernel-retention.js';
import { DEFAULT_KERNEL_LIMITS } from '../../src/kernel/kernel-limits.js';
import type { SqlQueryable } from '../../src/store/sql/sql-db.js';
import { gatewayDatabaseForFile } from '../helpers/gateway-database.js';
import { postgresAvailable } from '../helpers/postgres-server.js';

/** The audit log of gateways sharing a Postgres (DATABASE_URL): two logs stand for two replicas. */
describe.skipIf(!postgresAvailable())('the audit log in Postgres', () => {
  const pg = gatewayDatabaseForFile();
  const rec = (session: string, callId: string, extra: Partial<AuditRecord> = {}): AuditRecord => ({ ts: new Date().toISOString(), session, client: 'ops', call_id: callId, tool: 'fs.read', args: { path: `${callId}.txt` }, decision: 'allow', duration_ms: 2, ...extra });


  it("has a record in Postgres once its append resolves, the same capped and redacted line a file holds, and reads every replica's", async () => {
    const [a, b] = [createSqlAuditLog({ db: pg.db, sessionId: 'replica-a' }), createSqlAuditLog({ db: pg.db, sessionId: 'replica-b' })];
    await a.append(rec('replica-a', 'a1', { args: { path: 'x', token: `sk-${'A'.repeat(40)}`, body: 'y'.repeat(5000) } }));
    expect(await pg.db.query('select session, client, tool, decision from audit_records')).toEqual([{ session: 'replica-a', client: 'ops', tool: 'fs.read', decision: 'allow' }]);
    await Promise.all([b.append(rec('replica-b', 'b1', { decision: 'deny', reason: 'not allowed' })), a.append(rec('replica-a', 'a2'))]);
    const tail = await readSqlAuditTail(pg.db, { limit: 10 });
    expect(tail.records.map((r) => r.call_id)).toEqual(['a1', 'b1', 'a2']);
    const first = tail.records[0] as AuditRecord & { args: Record<string, unknown> };
    expect(JSON.stringify(first.args)).not.toContain('AAAAAAAAAA');
    expect(first.args['body']).toMatchObject({ $truncated: true, bytes: 5000 });
    expect((await readSqlAuditTail(pg.db, { limit: 10, session: 'replica-b' })).records.map((r) => r.call_id)).toEqual(['b1']);
    expect((await readSqlAuditTail(pg.db, { limit: 1 })).records.map((r) => r.call_id)).toEqual(['a2']);
    await Promise.all([a.close(), b.close()]);
    expect(a.stats()).toMatchObject({ appended: 2, written: 2, dropped: 0 });
  });

  it('shows the shared log through `kiwi audit tail` with DATABASE_URL, and refuses a bad limit or session id', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['audit', 'tail', '-n', '2', '--json'], { env: { DATABASE_URL: pg.url }, cwd: process.cwd(), io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
    expect(code).toBe(0);
    expect(out.map((l) => (JSON.parse(l) as AuditRecord).call_id)).toEqual(['b1', 'a2']);
    await expect(readSqlAuditTail(pg.db, { limit: 0 })).rejects.toThrow(/audit tail limit is 0: use an integer from 1 to 100000/);
    await expect(readSqlAuditTail(pg.db, { limit: 5, session: "x' or '1'='1" })).rejects.toThrow(/session/);
  });

  it('keeps records while Postgres is away, lets the call go on, and writes them once it answers', async () => {
    let down = true;
    const flaky: SqlQueryable = { query: (sql, params) => (down ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')) : pg.db.query(sql, params)) };
    const warnings: string[] = [];
    const log = createSqlAuditLog({ db: flaky, sessionId: 'replica-c', onWarning: (m) => warnings.push(m) });
    await log.append(rec('replica-c', 'c1'));
    await log.append(rec('replica-c', 'c2'));
    expect(warnings).toEqual([expect.stringMatching(/^audit log: could not write 1 record\(s\) to Postgres \(connect ECONNREFUSED.*trying again every second$/)]);
    await expect(log.flush()).rejects.toThrow(/2 record\(s\) are still waiting for Postgres/);
    down = false;
    await expect.poll(async () => (await readSqlAuditTail(pg.db, { limit: 10, session: 'replica-c' })).records.map((r) => r.call_id), { timeout: 5000 }).toEqual(['c1', 'c2']);
    await log.close();
  });

  it('forgets records older than the kernel keeps executions', async () => {
    const log = createSqlAuditLog({ db: pg.db, sessionId: 'replica-old' });
    await log.append(rec('replica-old', 'old', { ts: '2020-01-01T00:00:00.000Z' }));
    await log.close();
    const retention = createRetention({ db: pg.db, limits: DEFAULT_KERNEL_LIMITS, connectedRunners: () => [] });
    expect((await retention.sweep(new Date())).auditRecords).toBe(1);
    expect((await readSqlAuditTail(pg.db, { limit: 100 })).records.map((r) => r.call_id)).not.toContain('old');
  });
});
