import type { Context, Hono } from 'hono';
import { AUDIT_DECISIONS, MAX_AUDIT_PAGE, type AuditFilter, type AuditQuery } from '../../audit/audit-query.js';
import type { AuditRecord } from '../../audit/audit-record.js';
import { KiwiError } from '../../base/errors.js';
import { ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import { intParam, readId, readTime } from '../server/json-api.js';

/**
 * The audit log for the people who run the gateway: every tool call, allowed or denied, newest
 * first, filtered by client, tool, decision and time, a page at a time. The records are the ones
 * `kiwi audit tail` prints (already redacted and capped when written). A page's scan is capped
 * (audit/audit-query.ts): a filter that rarely matches gets pages cut short, `scan_capped`, whose
 * `next_cursor` goes on, rather than one request that reads the whole log.
 */

export function mountAdminAudit(app: Hono, route: AdminRoute, audit: AuditQuery): void {
  app.get(
    `${ADMIN_PREFIX}/audit`,
    route('audit', async (c) => {
      const cursor = optional(c, 'cursor');
      const page = await audit.page({
        ...auditFilter(c),
        ...(cursor === undefined ? {} : { cursor: readId(cursor, 'cursor') }),
        limit: intParam(c.req.query('limit'), 50, 1, MAX_AUDIT_PAGE),
        signal: c.req.raw.signal,
      });
      return c.json({ records: page.records, next_cursor: page.nextCursor, scan_capped: page.scanCapped });
    }),
  );
}

function auditFilter(c: Context): AuditFilter {
  const [client, tool, decision, since, until] = (['client', 'tool', 'decision', 'since', 'until'] as const).map((name) => optional(c, name));
  if (decision !== undefined && !(AUDIT_DECISIONS as readonly string[]).includes(decision)) {
    throw new KiwiError('INVALID_INPUT', `invalid decision ${JSON.stringify(decision.slice(0, 40))}: use one of ${AUDIT_DECISIONS.join(', ')}`);
  }
  const from = since === undefined ? undefined : readTime(since, 'since');
  const to = until === undefined ? undefined : readTime(until, 'until');
  if (from !== undefined && to !== undefined && from.getTime() >= to.getTime()) {
    throw new KiwiError('INVALID_INPUT', `since (${from.toISOString()}) must be before until (${to.toISOString()}): until is the first moment left out`);
  }
  return {
    ...(client === undefined ? {} : { client: readId(client, 'client') }),
    ...(tool === undefined ? {} : { tool: readId(tool, 'tool') }),
    ...(decision === undefined ? {} : { decision: decision as AuditRecord['decision'] }),
    ...(from === undefined ? {} : { since: from }),
    ...(to === undefined ? {} : { until: to }),
  };
}

/** A query parameter; an empty one is none, as in the other lists. */
function optional(c: Context, name: string): string | undefined {
  const value = c.req.query(name);
  return value === undefined || value === '' ? undefined : value;
}
