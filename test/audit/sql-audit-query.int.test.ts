import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditFilter } from '../../src/audit/audit-query.js';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { createSqlAuditLog } from '../../src/audit/sql-audit-log.js';
import { sqlAuditQuery } from '../../src/audit/sql-audit-query.js';
import { isKiwiError } from '../../src/base/errors.js';
import { gatewayDatabaseForFile } from '../helpers/gateway-database.js';
import { postgresAvailable } from '../helpers/postgres-server.js';
import { auditPages } from '../helpers/audit-pages.js';

/** The shared audit log (DATABASE_URL) searched a page at a time, as the admin API does; two logs stand for two replicas. */
describe.skipIf(!postgresAvailable())('the audit log in Postgres, a page at a time', () => {
  const pg = gatewayDatabaseForFile();
  const rec = (callId: string, ts: string, extra: Partial<AuditRecord> = {}): AuditRecord => ({ ts, session: 'conv', client: 'ops', call_id: callId, tool: 'fs.read', args: { path: 'a.txt' }, decision: 'allow', duration_ms: 3, ...extra });

  beforeAll(async () => {
    const [a, b] = [createSqlAuditLog({ db: pg.db, sessionId: 'replica-a' }), createSqlAuditLog({ db: pg.db, sessionId: 'replica-b' })];
    // Written one after the other: the order of the ids.
    await a.append(rec('r1', '2025-01-01T10:00:00Z'));
    await b.append(rec('r2', '2025-01-01T11:00:00Z', { client: 'ci', decision: 'deny', reason: 'not allowed' }));
    await a.append(rec('r3', '2025-01-02T08:00:00Z', { tool: 'git_status' }));
    await b.append(rec('r4', '2025-01-02T09:00:00Z', { client: 'ci' }));
    await a.append(rec('r5', '2025-01-02T12:00:00Z', { client: 'local' }));
    await Promise.all([a.close(), b.close()]);
  });


  it("reads every replica's records, the last written first, and pages on from its cursor", async () => {
    const query = sqlAuditQuery(pg.db);
    expect((await query.page({ limit: 50 })).records.map((r) => r.call_id)).toEqual(['r5', 'r4', 'r3', 'r2', 'r1']);
    expect(await auditPages(query, {}, 2)).toEqual([
      { ids: ['r5', 'r4'], capped: false },
      { ids: ['r3', 'r2'], capped: false },
      { ids: ['r1'], capped: false },
    ]);
    expect((await query.page({ limit: 5 })).nextCursor).toBe('');
  });

  it('filters on client, tool, decision and a time range (since included, until left out)', async () => {
    const query = sqlAuditQuery(pg.db);
    const ids = async (filter: AuditFilter): Promise<string[]> => (await query.page({ ...filter, limit: 50 })).records.map((r) => r.call_id);
    expect(await ids({ client: 'ci' })).toEqual(['r4', 'r2']);
    expect(await ids({ tool: 'git_status' })).toEqual(['r3']);
    expect(await ids({ decision: 'deny' })).toEqual(['r2']);
    expect(await ids({ client: 'ci', decision: 'allow' })).toEqual(['r4']);
    expect(await ids({ since: new Date('2025-01-02T08:00:00Z'), until: new Date('2025-01-02T12:00:00Z') })).toEqual(['r4', 'r3']);
    expect(await ids({ client: "ci' or '1'='1" })).toEqual([]);
  });

  it('looks at no more rows a page than its cap, says so, and its cursor still reaches every record', async () => {
    const query = sqlAuditQuery(pg.db, { maxScanRows: 2 });
    const first = await query.page({ decision: 'deny', limit: 50 });
    expect(first).toMatchObject({ records: [], scanCapped: true });
    const all = await auditPages(query, { decision: 'deny' }, 50);
    expect(all.flatMap((p) => p.ids)).toEqual(['r2']);
    expect(all.map((p) => p.capped)).toEqual([true, true, false]);
  });

  it("refuses a cursor it did not give (a file store's, a number too large, text)", async () => {
    const query = sqlAuditQuery(pg.db);
    for (const cursor of ['2025-01-02/gateway/0/12', '0', '-1', '99999999999999999999', "1 or 1=1"]) {
      const refused = await query.page({ limit: 5, cursor }).then(() => 'not refused', (error: unknown) => (isKiwiError(error) ? `${error.code}: ${error.message}` : String(error)));
      expect(refused).toMatch(/^INVALID_INPUT: the cursor is not one the audit log in Postgres \(DATABASE_URL, table audit_records\) gave/);
    }
  });
});
