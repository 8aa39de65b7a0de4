import { KiwiError } from '../base/errors.js';
import type { SqlQueryable } from '../store/sql/sql-db.js';
import { validateSessionId } from './audit-files.js';
import { parseAuditLine, type AuditTail } from './audit-reader.js';
import type { AuditRecord } from './audit-record.js';

const MAX_LIMIT = 100_000;

/** The last `limit` records of the shared audit log (sql-audit-log.ts), oldest first; only `session`'s when given. */
export async function readSqlAuditTail(db: SqlQueryable, options: { limit: number; session?: string }): Promise<AuditTail> {
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new KiwiError('INVALID_INPUT', `audit tail limit is ${String(limit)}: use an integer from 1 to ${MAX_LIMIT}`);
  }
  const rows =
    options.session === undefined
      ? await db.query<{ line: string }>('select line from audit_records order by id desc limit $1', [limit])
      : await db.query<{ line: string }>('select line from audit_records where session = $1 order by id desc limit $2', [validateSessionId(options.session), limit]);
  const tail: AuditTail = { records: [], malformed: 0, torn: 0, filesRead: 0 };
  for (const { line } of rows.reverse()) {
    const record = parseAuditLine(line);
    if (record === 'malformed' || record === null) tail.malformed += 1;
    else tail.records.push(record satisfies AuditRecord);
  }
  return tail;
}
