import type { AuditFilter, AuditQuery } from '../../src/audit/audit-query.js';

/** Every page of an audit query from the newest on, as the call ids of each and whether its scan was capped. */
export async function auditPages(query: AuditQuery, filter: AuditFilter, limit: number): Promise<{ ids: string[]; capped: boolean }[]> {
  const out: { ids: string[]; capped: boolean }[] = [];
  let cursor: string | undefined;
  do {
    const page = await query.page({ ...filter, limit, ...(cursor === undefined ? {} : { cursor }) });
    out.push({ ids: page.records.map((r) => r.call_id), capped: page.scanCapped });
    cursor = page.nextCursor === '' ? undefined : page.nextCursor;
    if (out.length > 100) throw new Error('the pages never end');
  } while (cursor !== undefined);
  return out;
}
