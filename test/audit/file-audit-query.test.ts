import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditFilter } from '../../src/audit/audit-query.js';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { fileAuditQuery } from '../../src/audit/file-audit-query.js';
import { auditPages } from '../helpers/audit-pages.js';
import { refusal } from '../helpers/expect-failure.js';

let dir: string;

// Sessions are named `<source>-<start>-<random>`: the cli run started after the gateway.
const GATEWAY = 'gateway-20250102T080000-aaaaaa';
const CLI = 'cli-20250102T120000-bbbbbb';

function rec(callId: string, ts: string, extra: Partial<AuditRecord> = {}): AuditRecord {
  return { ts, session: 'conv', client: 'ops', call_id: callId, tool: 'fs.read', args: { path: 'a.txt' }, decision: 'allow', duration_ms: 3, ...extra };
}

async function put(day: string, file: string, records: AuditRecord[], tail = ''): Promise<void> {
  await mkdir(path.join(dir, day), { recursive: true });
  await writeFile(path.join(dir, day, file), records.map((r) => `${JSON.stringify(r)}\n`).join('') + tail);
}



beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kiwi-audit-query-'));
  await put('2025-01-01', `${GATEWAY}.jsonl`, [rec('d1-a', '2025-01-01T10:00:00Z'), rec('d1-b', '2025-01-01T11:00:00Z', { client: 'ci', decision: 'deny', reason: 'not allowed' })]);
  // The gateway's session went on in a second part that day; a cli run wrote its own file.
  await put('2025-01-02', `${GATEWAY}.jsonl`, [rec('g-1', '2025-01-02T08:00:00Z'), rec('g-2', '2025-01-02T09:00:00Z', { client: 'ci' })]);
  await put('2025-01-02', `${GATEWAY}+1.jsonl`, [rec('g-3', '2025-01-02T13:00:00Z', { tool: 'git_status' })], '{"ts":"2025-01-02T13:00:01Z","torn');
  await put('2025-01-02', `${CLI}.jsonl`, [rec('c-1', '2025-01-02T12:00:00Z', { client: 'local' })]);
  await writeFile(path.join(dir, '2025-01-02', 'notes.txt'), 'not an audit file');
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the audit files, a page at a time', () => {
  it('reads the newest day first, the most recently started session first, its newest part and line first', async () => {
    const page = await fileAuditQuery(dir).page({ limit: 50 });
    expect(page.records.map((r) => r.call_id)).toEqual(['c-1', 'g-3', 'g-2', 'g-1', 'd1-b', 'd1-a']);
    expect(page).toMatchObject({ nextCursor: '', scanCapped: false });
  });

  it('pages on from its cursor without a record twice or one left out, and ends with an empty cursor', async () => {
    const query = fileAuditQuery(dir);
    expect(await auditPages(query, {}, 2)).toEqual([
      { ids: ['c-1', 'g-3'], capped: false },
      { ids: ['g-2', 'g-1'], capped: false },
      { ids: ['d1-b', 'd1-a'], capped: false },
    ]);
    // A full last page: it says there is no next one only when it has looked.
    expect((await query.page({ limit: 6 })).nextCursor).toBe('');
    const five = await query.page({ limit: 5 });
    expect((await query.page({ limit: 5, cursor: five.nextCursor })).records.map((r) => r.call_id)).toEqual(['d1-a']);
  });

  it('filters on client, tool, decision and a time range (since included, until left out)', async () => {
    const query = fileAuditQuery(dir);
    const ids = async (filter: AuditFilter): Promise<string[]> => (await query.page({ ...filter, limit: 50 })).records.map((r) => r.call_id);
    expect(await ids({ client: 'ci' })).toEqual(['g-2', 'd1-b']);
    expect(await ids({ tool: 'git_status' })).toEqual(['g-3']);
    expect(await ids({ decision: 'deny' })).toEqual(['d1-b']);
    expect(await ids({ client: 'ci', decision: 'allow' })).toEqual(['g-2']);
    expect(await ids({ since: new Date('2025-01-02T09:00:00Z'), until: new Date('2025-01-02T13:00:00Z') })).toEqual(['c-1', 'g-2']);
    expect(await ids({ until: new Date('2025-01-02T00:00:00Z') })).toEqual(['d1-b', 'd1-a']);
    expect(await ids({ client: 'nobody' })).toEqual([]);
    expect(await auditPages(query, { client: 'ci' }, 1)).toEqual([
      { ids: ['g-2'], capped: false },
      { ids: ['d1-b'], capped: false },
    ]);
  });

  it('stops at its byte cap, says so, and its cursor still reaches every record', async () => {
    const line = `${JSON.stringify(rec('x', '2025-01-02T08:00:00Z'))}\n`.length;
    const query = fileAuditQuery(dir, { maxScanBytes: 2 * line });
    const first = await query.page({ client: 'ci', limit: 50 });
    expect(first).toMatchObject({ records: [], scanCapped: true });
    expect(first.nextCursor).not.toBe('');
    const all = await auditPages(query, { client: 'ci' }, 50);
    expect(all.flatMap((p) => p.ids)).toEqual(['g-2', 'd1-b']);
    expect(all.some((p) => p.capped)).toBe(true);
    expect(all.at(-1)?.capped).toBe(false);
  });

  it('stops at its file cap the same way', async () => {
    const all = await auditPages(fileAuditQuery(dir, { maxScanFiles: 1 }), {}, 50);
    expect(all.flatMap((p) => p.ids)).toEqual(['c-1', 'g-3', 'g-2', 'g-1', 'd1-b', 'd1-a']);
    expect(all.map((p) => p.capped)).toEqual([true, true, true, false]);
  });

  it('does not show again what an earlier page showed when records are written meanwhile', async () => {
    const query = fileAuditQuery(dir);
    const first = await query.page({ limit: 2 });
    await appendFile(path.join(dir, '2025-01-02', `${CLI}.jsonl`), `${JSON.stringify(rec('c-2', '2025-01-02T14:00:00Z'))}\n`);
    const rest = await query.page({ limit: 50, cursor: first.nextCursor });
    expect(rest.records.map((r) => r.call_id)).toEqual(['g-2', 'g-1', 'd1-b', 'd1-a']);
    expect((await query.page({ limit: 1 })).records.map((r) => r.call_id)).toEqual(['c-2']);
  });

  it('refuses a cursor it did not give, and a page size out of range', async () => {
    const query = fileAuditQuery(dir);
    for (const cursor of ['12345', '2025-01-02/../../etc/0/0', '2025-13-01/s/0/0', '2025-01-02/s/0/-1', '2025-01-02/s/0/0/0']) {
      expect(await refusal(query.page({ limit: 5, cursor }))).toMatch(/^INVALID_INPUT: the cursor is not one the audit log in .* gave; pass a page's next_cursor unchanged/);
    }
    expect(await refusal(query.page({ limit: 0 }))).toBe('INVALID_INPUT: an audit page holds 1 to 200 records, not 0');
    expect(await refusal(query.page({ limit: 201 }))).toMatch(/^INVALID_INPUT: an audit page holds 1 to 200/);
  });

  it('is empty, not an error, when there is no audit folder yet', async () => {
    expect(await fileAuditQuery(path.join(dir, 'missing')).page({ limit: 5 })).toEqual({ records: [], nextCursor: '', scanCapped: false });
  });
});
