import { describeError, KiwiError } from '../base/errors.js';
import { createGroupCommit } from '../base/group-commit.js';
import type { SqlQueryable, SqlValue } from '../store/sql/sql-db.js';
import type { AuditLog, AuditLogStats } from './audit-log.js';
import { validateSessionId } from './audit-files.js';
import { serializeAuditRecord, type AuditRecord, type RecordCaps } from './audit-record.js';

/**
 * The audit log in Postgres (table `audit_records`, kernel migration 14), for gateways that share
 * a server (`DATABASE_URL`): every replica's records in one place, read by `kiwi audit tail` and
 * the predictor's training wherever they run, and kept when a replica's disk is not.
 *
 * Records are the same capped, redacted JSON lines the files hold (audit-record.ts), with the
 * fields a reader filters on in columns, written in group commits (group-commit.ts): `append`
 * resolves once its record's insert committed, or at once while Postgres is away (the record is
 * kept and tried again; a result is not held back by an outage).
 */

/** 7 parameters a row, under Postgres's 65 535. */
const ROWS_PER_INSERT = 1_000;
/** The files' own caps (audit-log.ts), so a record reads the same from either. */
const CAPS: RecordCaps = { maxLineBytes: 64 * 1024 - 1, maxStringChars: 1024, maxArgsBytes: 8 * 1024, maxResultBytes: 8 * 1024 };

export function createSqlAuditLog(options: { db: SqlQueryable; sessionId: string; onWarning?: (message: string) => void }): AuditLog {
  const { db } = options;
  const session = validateSessionId(options.sessionId);
  const onWarning = options.onWarning ?? ((message: string) => process.emitWarning(message, { code: 'KIWI_AUDIT' }));
  const counts = { appended: 0, written: 0, writes: 0, dropped: 0, warnings: 0 };
  const warn = (message: string): void => {
    counts.warnings += 1;
    onWarning(`audit log: ${message}`);
  };
  let closed = false;

  const rows = createGroupCommit<SqlValue[]>({
    what: 'record',
    store: 'Postgres',
    maxBatch: ROWS_PER_INSERT,
    maxWaiting: 100_000,
    onFailure: warn,
    async write(batch) {
      const values = batch.map((_, i) => `(${[1, 2, 3, 4, 5, 6, 7].map((j) => `$${i * 7 + j}`).join(', ')})`).join(', ');
      await db.query(`insert into audit_records (at, session, client, tool, decision, trace_id, line) values ${values}`, batch.flat());
      counts.written += batch.length;
      counts.writes += 1;
    },
  });

  function row(record: AuditRecord, line: string): SqlValue[] {
    const at = Date.parse(typeof record.ts === 'string' ? record.ts : '');
    return [new Date(Number.isNaN(at) ? Date.now() : at).toISOString(), session, record.client ?? null, record.tool, record.decision === 'allow' ? 'allow' : 'deny', record.trace_id ?? null, line];
  }

  return {
    append(record) {
      let line: string;
      try {
        if (closed) throw new Error('the audit log is closed');
        line = serializeAuditRecord(record, CAPS);
      } catch (error) {
        counts.dropped += 1;
        warn(`a record was dropped: ${describeError(error)}`);
        return Promise.resolve();
      }
      counts.appended += 1;
      return rows.add(row(record, line));
    },
    async flush() {
      await rows.idle();
      if (rows.waiting > 0) throw new KiwiError('UNAVAILABLE', `audit log: ${rows.waiting} record(s) are still waiting for Postgres, which does not answer`, { details: { waiting: rows.waiting } });
    },
    async close() {
      closed = true;
      const left = await rows.close();
      if (left > 0) {
        counts.dropped += left;
        warn(`${left} record(s) could not be written to Postgres before closing`);
      }
    },
    path: () => `postgres:audit_records (session ${session})`,
    stats: (): AuditLogStats => ({ ...counts, droppedFull: 0, rotations: 0, scans: 0, prunedFiles: 0, prunedBytes: 0 }),
  };
}
