import { KiwiError } from '../base/errors.js';
import type { AuditRecord } from './audit-record.js';

/**
 * The audit log searched a page at a time, newest first, for the admin API: the files of one
 * gateway (file-audit-query.ts) or the table that gateways sharing a Postgres write
 * (sql-audit-query.ts). Each page's work is capped, whatever the log's size and however rarely
 * the filter matches: a page cut short by the cap says so (`scanCapped`), and its cursor goes
 * on from where the scan stopped, so that paging on still reaches every record.
 */

export const AUDIT_DECISIONS = ['allow', 'deny'] as const satisfies readonly AuditRecord['decision'][];

/** What a page's records must match; every field is optional, and all that are given must match. */
export interface AuditFilter {
  /** The client that asked (its key's name, or `local`), exactly. */
  client?: string;
  /** The tool's id (or a directive's or knowledge entry's), exactly. */
  tool?: string;
  decision?: AuditRecord['decision'];
  /** Calls that started at or after this time. */
  since?: Date;
  /** Calls that started before this time. */
  until?: Date;
}

export interface AuditPageRequest extends AuditFilter {
  /** A page's `nextCursor`: the page after it. Absent: the newest page. */
  cursor?: string;
  /** Most records in the page (1..MAX_AUDIT_PAGE). */
  limit: number;
  signal?: AbortSignal;
}

export interface AuditPage {
  /** Newest first. */
  records: AuditRecord[];
  /** The next page's cursor; empty when there is nothing older to look at. */
  nextCursor: string;
  /** The scan stopped at its cap before the page was full: there may be more matches, `nextCursor` goes on. */
  scanCapped: boolean;
}

export interface AuditQuery {
  page(request: AuditPageRequest): Promise<AuditPage>;
}

export const MAX_AUDIT_PAGE = 200;

/** Whether the record matches the filter. */
export function matchesAuditFilter(record: AuditRecord, filter: AuditFilter): boolean {
  if (filter.client !== undefined && record.client !== filter.client) return false;
  if (filter.tool !== undefined && record.tool !== filter.tool) return false;
  if (filter.decision !== undefined && record.decision !== filter.decision) return false;
  if (filter.since === undefined && filter.until === undefined) return true;
  const at = Date.parse(record.ts);
  return !((filter.since !== undefined && at < filter.since.getTime()) || (filter.until !== undefined && at >= filter.until.getTime()));
}

/** INVALID_INPUT for a limit out of range: the admin API checks it first, this is for other callers. */
export function checkAuditPageLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE) throw new KiwiError('INVALID_INPUT', `an audit page holds 1 to ${MAX_AUDIT_PAGE} records, not ${String(limit)}`);
  return limit;
}

/** A cursor this store never gave: from another store, cut, or made up. */
export function foreignAuditCursor(where: string): KiwiError {
  return new KiwiError('INVALID_INPUT', `the cursor is not one the audit log in ${where} gave; pass a page's next_cursor unchanged, or none for the newest page`);
}
