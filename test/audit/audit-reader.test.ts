import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { formatAuditRecord, readAuditTail, readAuditTailWithStats } from '../../src/audit/audit-reader.js';

let dir: string;

function rec(callId: string, ts: string, extra: Partial<AuditRecord> = {}): AuditRecord {
  return { ts, session: 's1', call_id: callId, tool: 'fs.read', args: { path: 'a.txt' }, decision: 'allow', duration_ms: 12, ...extra };
}

async function put(date: string, session: string, content: string): Promise<void> {
  await mkdir(path.join(dir, date), { recursive: true });
  await writeFile(path.join(dir, date, `${session}.jsonl`), content);
}

const jsonl = (records: AuditRecord[]): string => records.map((r) => `${JSON.stringify(r)}\n`).join('');

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kiwi-audit-reader-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readAuditTail', () => {
  it('skips and counts a malformed middle line, a non-record line and a torn last line', async () => {
    const a = rec('a', '2025-01-02T00:00:01Z');
    const b = rec('b', '2025-01-02T00:00:02Z');
    await put('2025-01-02', 's1', `${JSON.stringify(a)}\n{not json\n{"foo":1}\n\n${JSON.stringify(b)}\n{"ts":"2025-01-02T00:00:03Z","sess`);
    const tail = await readAuditTailWithStats({ dir, limit: 10 });
    expect(tail.records).toEqual([a, b]);
    expect(tail).toMatchObject({ malformed: 2, torn: 1, filesRead: 1 });
  });

  it('ignores a long torn tail and a file that is one torn line', async () => {
    const a = rec('a', '2025-01-05T00:00:01Z');
    await put('2025-01-05', 's1', `${JSON.stringify(a)}\n${'z'.repeat(200_000)}`);
    await put('2025-01-05', 's2', 'no newline at all');
    const tail = await readAuditTailWithStats({ dir, limit: 10, maxLineBytes: 4096 });
    expect(tail.records).toEqual([a]);
    expect(tail).toMatchObject({ malformed: 0, torn: 2 });
  });

  it('returns the newest records last, across date folders, reading only the folders it needs', async () => {
    await put('2025-01-01', 's1', jsonl([rec('d1-1', '2025-01-01T10:00:00Z'), rec('d1-2', '2025-01-01T11:00:00Z')]));
    await put('2025-01-02', 's1', jsonl([rec('d2-1', '2025-01-02T10:00:00Z')]));
    await put('2025-01-02', 's2', jsonl([rec('d2-s2', '2025-01-02T09:00:00Z', { session: 's2' })]));
    await mkdir(path.join(dir, 'not-a-date'));

    const three = await readAuditTailWithStats({ dir, limit: 3 });
    expect(three.records.map((r) => r.call_id)).toEqual(['d1-2', 'd2-s2', 'd2-1']);
    expect(three.filesRead).toBe(3);

    const two = await readAuditTailWithStats({ dir, limit: 2 });
    expect(two.records.map((r) => r.call_id)).toEqual(['d2-s2', 'd2-1']);
    expect(two.filesRead).toBe(2);

    expect((await readAuditTail({ dir, limit: 10, session: 's1' })).map((r) => r.call_id)).toEqual(['d1-1', 'd1-2', 'd2-1']);
    expect((await readAuditTail({ dir, limit: 10, date: '2025-01-01' })).map((r) => r.call_id)).toEqual(['d1-1', 'd1-2']);
    expect(await readAuditTail({ dir, limit: 10, session: 'nobody' })).toEqual([]);
  });

  it('reads a session rotated into parts in write order, only as many parts as it needs', async () => {
    const at = (i: number): string => new Date(Date.UTC(2025, 0, 6, 0, 0, i)).toISOString();
    await put('2025-01-06', 's1', jsonl([rec('p0-a', at(1)), rec('p0-b', at(2))]));
    await put('2025-01-06', 's1+1', jsonl([rec('p1-a', at(3)), rec('p1-b', at(4))]));
    await put('2025-01-06', 's1+2', jsonl([rec('p2-a', at(5))]));
    await put('2025-01-06', 's1+10', jsonl([rec('p10-a', at(6))]));
    // A session whose id merely looks like a part, and names that are not audit files.
    await put('2025-01-06', 's1.3', jsonl([rec('other', at(0), { session: 's1.3' })]));
    await put('2025-01-06', 's1+0', jsonl([rec('bogus', at(7))]));
    await put('2025-01-06', 's1+x', jsonl([rec('bogus', at(7))]));

    const all = await readAuditTailWithStats({ dir, limit: 100, session: 's1' });
    expect(all.records.map((r) => r.call_id)).toEqual(['p0-a', 'p0-b', 'p1-a', 'p1-b', 'p2-a', 'p10-a']);
    expect(all.filesRead).toBe(4);
    const last = await readAuditTailWithStats({ dir, limit: 3, session: 's1' });
    expect(last.records.map((r) => r.call_id)).toEqual(['p1-b', 'p2-a', 'p10-a']);
    expect(last.filesRead).toBe(3);
    expect((await readAuditTail({ dir, limit: 100 })).map((r) => r.call_id)).toEqual(['other', 'p0-a', 'p0-b', 'p1-a', 'p1-b', 'p2-a', 'p10-a']);
    expect((await readAuditTail({ dir, limit: 100, session: 's1.3' })).map((r) => r.call_id)).toEqual(['other']);
  });

  it('returns nothing for an audit folder that does not exist yet', async () => {
    expect(await readAuditTail({ dir: path.join(dir, 'missing'), limit: 5 })).toEqual([]);
  });

  it('reads lines that straddle chunk boundaries, multi-byte characters included', async () => {
    const records = Array.from({ length: 600 }, (_, i) =>
      rec(`c${i}`, new Date(Date.UTC(2025, 0, 3, 0, 0, i)).toISOString(), { args: { text: `é€😀${'ß'.repeat(i % 97)}` } }),
    );
    await put('2025-01-03', 's1', jsonl(records));
    const tail = await readAuditTailWithStats({ dir, limit: 100_000 });
    expect(tail).toMatchObject({ malformed: 0, torn: 0 });
    expect(tail.records).toEqual(records);
    expect((await readAuditTail({ dir, limit: 7 })).map((r) => r.call_id)).toEqual(records.slice(-7).map((r) => r.call_id));
  });

  it('skips lines longer than maxLineBytes as malformed', async () => {
    const small = rec('small', '2025-01-04T00:00:01Z');
    const huge = rec('huge', '2025-01-04T00:00:02Z', { args: 'x'.repeat(300_000) });
    await put('2025-01-04', 's1', jsonl([small, huge, small]));
    const tail = await readAuditTailWithStats({ dir, limit: 10, maxLineBytes: 4096 });
    expect(tail.records.map((r) => r.call_id)).toEqual(['small', 'small']);
    expect(tail.malformed).toBe(1);
  });

  it.each([0, -1, 1.5, 1_000_000, Number.NaN])('rejects limit %s', async (limit) => {
    await expect(readAuditTail({ dir, limit })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/limit is .*: use an integer from 1 to 100000/) });
  });

  it.each(['../etc', 'a/b', ''])('rejects session %j', async (session) => {
    await expect(readAuditTail({ dir, limit: 1, session })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/invalid audit session id/) });
  });

  it.each(['2025-13-01', '2025-02-30', '../x', '20250101'])('rejects date %j', async (date) => {
    await expect(readAuditTail({ dir, limit: 1, date })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/use YYYY-MM-DD/) });
  });

  it('rejects a read whose signal has fired', async () => {
    await expect(readAuditTail({ dir, limit: 1, signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'TOOL_CANCELLED' });
  });
});

describe('formatAuditRecord', () => {
  it('formats an allowed call on one line', () => {
    const line = formatAuditRecord(rec('c1', '2025-01-02T03:04:05.678Z', { reason: 'rule fs.*', source: 'cli' }));
    expect(line).toBe('2025-01-02T03:04:05.678Z  s1  ALLOW  fs.read  {"path":"a.txt"}  12ms  [cli]  — rule fs.*');
  });

  it('formats a denial, an error, a stuck call and long durations', () => {
    expect(formatAuditRecord(rec('c2', '2025-01-02T03:04:05Z', { decision: 'deny', reason: 'not allowed', duration_ms: 0 }))).toContain('DENY   fs.read  {"path":"a.txt"}  0ms  — not allowed');
    const failed = formatAuditRecord(rec('c3', '2025-01-02T03:04:05Z', { error: { code: 'TOOL_TIMEOUT', message: 'took too long' }, stuck: true, duration_ms: 1500 }));
    expect(failed).toContain('1.5s  STUCK  error TOOL_TIMEOUT: took too long');
    expect(formatAuditRecord(rec('c4', '2025-01-02T03:04:05Z', { duration_ms: 125_000, args: undefined }))).toContain('fs.read  -  2m5s');
  });

  it('shortens long args and escapes control characters so the line stays one safe line', () => {
    const line = formatAuditRecord(
      rec('c5', '2025-01-02T03:04:05Z', { tool: 'evil\u001b[31m\ntool', args: { text: 'y'.repeat(500) }, reason: 'line1\nline2\u202e' }),
    );
    expect(line).not.toMatch(/[\u0000-\u001f\u202e]/);
    expect(line).toContain('evil\\u001b[31m\\u000atool');
    expect(line).toContain('line1\\u000aline2\\u202e');
    expect(line).toMatch(/\{"text":"y+…/);
    expect(line.length).toBeLessThan(300);
  });
});
