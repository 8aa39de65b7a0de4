import type { SqlQueryable, SqlValue } from '../store/sql/sql-db.js';
import { checkAuditPageLimit, foreignAuditCursor, type AuditPage, type AuditQuery } from './audit-query.js';
import { parseAuditLine } from './audit-reader.js';
import type { AuditRecord } from './audit-record.js';

/**
 * The shared audit log (table `audit_records`, sql-audit-log.ts) searched a page at a time, in
 * the order the records were written, newest first; the cursor is the id of a page's last
 * record. A page looks at most `maxScanRows` rows of the client and time range asked for (both
 * indexed columns), and filters those on tool and decision: a rare tool or decision makes a page
 * cut short by that cap (`scanCapped`), never a scan of the whole table, and its cursor goes on
 * from the oldest row it looked at. Only the ids of the rows looked at are held, and the lines
 * of the page's own.
 */

export interface SqlAuditQueryOptions {
  /** Rows one page looks at most. Default 20 000. */
  maxScanRows?: number;
}

const WHERE = 'Postgres (DATABASE_URL, table audit_records)';

export function sqlAuditQuery(db: SqlQueryable, options: SqlAuditQueryOptions = {}): AuditQuery {
  const maxScanRows = options.maxScanRows ?? 20_000;
  return {
    async page(request): Promise<AuditPage> {
      const limit = checkAuditPageLimit(request.limit);
      if (request.cursor !== undefined && !/^[1-9][0-9]{0,17}$/.test(request.cursor)) throw foreignAuditCursor(WHERE);
      const params: SqlValue[] = [];
      const param = (value: SqlValue): string => `$${params.push(value)}`;
      const scannedWhere = [
        ...(request.cursor === undefined ? [] : [`id < ${param(request.cursor)}::bigint`]),
        ...(request.client === undefined ? [] : [`client = ${param(request.client)}`]),
        ...(request.since === undefined ? [] : [`at >= ${param(request.since.toISOString())}::timestamptz`]),
        ...(request.until === undefined ? [] : [`at < ${param(request.until.toISOString())}::timestamptz`]),
      ];
      const matchedWhere = [
        ...(request.tool === undefined ? [] : [`tool = ${param(request.tool)}`]),
        ...(request.decision === undefined ? [] : [`decision = ${param(request.decision)}`]),
      ];
      const rows = await db.query<{ scanned: number | string; oldest: string | null; id: string | null; line: string | null }>(
        `with scanned as (
           select id, tool, decision from audit_records where ${scannedWhere.join(' and ') || 'true'} order by id desc limit ${param(maxScanRows)}
         ),
         matched as (
           select id from scanned where ${matchedWhere.join(' and ') || 'true'} order by id desc limit ${param(limit + 1)}
         )
         select s.scanned, s.oldest::text as oldest, r.id::text as id, r.line
         from (select count(*) as scanned, min(id) as oldest from scanned) s
         left join matched m on true
         left join audit_records r on r.id = m.id
         order by r.id desc nulls last`,
        params,
      );
      const matched = rows.filter((r): r is typeof r & { id: string; line: string } => r.id !== null && r.line !== null);
      const records: AuditRecord[] = [];
      for (const { line } of matched.slice(0, limit)) {
        const record = parseAuditLine(line);
        if (record !== null && record !== 'malformed') records.push(record);
      }
      const [head] = rows;
      // One more than the page holds: the next page starts after the page's last row.
      if (matched.length > limit) return { records, nextCursor: (matched[limit - 1] as { id: string }).id, scanCapped: false };
      if (head !== undefined && Number(head.scanned) >= maxScanRows && head.oldest !== null) return { records, nextCursor: head.oldest, scanCapped: matched.length < limit };
      return { records, nextCursor: '', scanCapped: false };
    },
  };
}
