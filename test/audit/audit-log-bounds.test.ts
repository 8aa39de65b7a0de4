import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import type { AuditLog, AuditLogOptions } from '../../src/audit/audit-log.js';
import { readAuditTailWithStats } from '../../src/audit/audit-reader.js';
import type { AuditRecord } from '../../src/audit/audit-record.js';

const KiB = 1024;
let dir: string;
let clock: Date;
let warnings: string[];
const logs: AuditLog[] = [];

function open(options: Partial<AuditLogOptions> = {}): AuditLog {
  const log = createAuditLog({ dir, sessionId: 's1', now: () => clock, flushIntervalMs: 60_000, onWarning: (m) => warnings.push(m), ...options });
  logs.push(log);
  return log;
}

function rec(callId: string, extra: Partial<AuditRecord> = {}): AuditRecord {
  return { ts: clock.toISOString(), session: 's1', call_id: callId, tool: 'read_file', args: { path: `${callId}.txt` }, decision: 'allow', duration_ms: 1, ...extra };
}

/** The attack from issue 9: a denied read of a 60 KB path, whose reason repeats the path. */
function attack(callId: string): AuditRecord {
  const payload = `/etc/${'../'.repeat(20_000)}`;
  return rec(callId, { args: { path: payload }, decision: 'deny', reason: `path ${payload} is outside the read globs` });
}

/** Every file under `root` with its size in bytes, relative paths sorted. */
async function sizes(root: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out[path.relative(root, file)] = (await stat(file)).size;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

const total = (files: Record<string, number>): number => Object.values(files).reduce((a, b) => a + b, 0);

async function put(relative: string, bytes: number): Promise<void> {
  const file = path.join(dir, relative);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${'x'.repeat(bytes - 1)}\n`);
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kiwi-audit-bounds-'));
  clock = new Date('2025-03-04T10:00:00.000Z');
  warnings = [];
});

afterEach(async () => {
  for (const log of logs.splice(0)) await log.close().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

describe('audit log bounds', () => {
  it('writes a few KB per denied call with a 60 KB argument, not 64 KiB', async () => {
    const log = open();
    for (let i = 0; i < 500; i += 1) log.append(attack(`a${i}`));
    await log.close();
    const files = await sizes(dir);
    expect(Object.keys(files)).toEqual([path.join('2025-03-04', 's1.jsonl')]);
    // Before the caps each of these was a 64 KiB line: 32 MB for 500 calls.
    expect(total(files)).toBeLessThan(500 * 3 * KiB);
    const read = await readAuditTailWithStats({ dir, limit: 1000 });
    expect(read.records).toHaveLength(500);
    expect(read.malformed).toBe(0);
  });

  it('holds a flood of such calls to the total cap and warns once', async () => {
    const log = open({ maxRecordBytes: 32 * KiB, maxFileBytes: 64 * KiB, maxTotalBytes: 256 * KiB });
    for (let round = 0; round < 10; round += 1) {
      for (let i = 0; i < 60; i += 1) log.append(attack(`r${round}-${i}`));
      await log.flush();
    }
    const files = await sizes(dir);
    expect(total(files)).toBeLessThanOrEqual(256 * KiB);
    expect(Object.values(files).every((size) => size <= 64 * KiB)).toBe(true);
    const stats = log.stats();
    expect(stats.written + stats.droppedFull).toBe(600);
    expect(stats.droppedFull).toBeGreaterThan(0);
    expect(stats.dropped).toBe(stats.droppedFull);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/audit folder .* is at its cap of 262144 bytes .* new audit records are dropped; free space there or raise/);
    // While full it does not measure the folder again before the retry time.
    expect(stats.scans).toBeLessThanOrEqual(6);
  });

  it('rotates into <session>+1.jsonl, +2 … at maxFileBytes, and the reader reads the parts in order', async () => {
    const log = open({ maxRecordBytes: 32 * KiB, maxFileBytes: 32 * KiB });
    for (let i = 0; i < 100; i += 1) log.append(rec(`c${i}`, { args: { text: `${i}:${'z'.repeat(900)}` } }));
    await log.close();
    const files = await sizes(path.join(dir, '2025-03-04'));
    expect(Object.keys(files).sort()).toEqual(['s1+1.jsonl', 's1+2.jsonl', 's1+3.jsonl', 's1.jsonl']);
    for (const size of Object.values(files)) expect(size).toBeLessThanOrEqual(32 * KiB);
    for (const name of Object.keys(files)) expect((await readFile(path.join(dir, '2025-03-04', name), 'utf8')).endsWith('\n')).toBe(true);
    expect(log.stats()).toMatchObject({ written: 100, rotations: 3, dropped: 0 });
    const read = await readAuditTailWithStats({ dir, limit: 1000, session: 's1' });
    expect(read.records.map((r) => r.call_id)).toEqual(Array.from({ length: 100 }, (_, i) => `c${i}`));
  });

  it('goes on in the newest part after a restart, repairing its torn tail', async () => {
    const first = open({ maxRecordBytes: 32 * KiB, maxFileBytes: 32 * KiB });
    for (let i = 0; i < 40; i += 1) first.append(rec(`old${i}`, { args: { text: 'z'.repeat(900) } }));
    await first.close();
    const newest = path.join(dir, '2025-03-04', 's1+1.jsonl');
    const before = await readFile(newest, 'utf8');
    await writeFile(newest, `${before}{"ts":"2025-03-04T10:`);
    const second = open({ maxRecordBytes: 32 * KiB, maxFileBytes: 32 * KiB });
    second.append(rec('new'));
    await second.close();
    const after = await readFile(newest, 'utf8');
    expect(after.startsWith(before)).toBe(true);
    expect(after.slice(before.length)).toMatch(/^\{"ts".*"call_id":"new".*\}\n$/);
    const read = await readAuditTailWithStats({ dir, limit: 1000 });
    expect(read).toMatchObject({ torn: 0, malformed: 0 });
    expect(read.records.at(-1)?.call_id).toBe('new');
    expect(read.records).toHaveLength(41);
  });

  it('deletes the oldest finished days first to stay under the total cap, and says so', async () => {
    await put('2025-02-01/a.jsonl', 60 * KiB);
    await put('2025-02-02/b.jsonl', 60 * KiB);
    await put('2025-03-03/yesterday.jsonl', 60 * KiB);
    await put('2025-03-04/today.jsonl', 60 * KiB);
    await put('2025-02-01/notes.txt', 10); // not an audit file: neither counted nor deleted
    const log = open({ maxRecordBytes: 32 * KiB, maxFileBytes: 32 * KiB, maxTotalBytes: 256 * KiB });
    log.append(rec('c1'));
    await log.flush();
    expect(Object.keys(await sizes(dir))).toEqual([
      path.join('2025-02-01', 'notes.txt'),
      path.join('2025-02-02', 'b.jsonl'),
      path.join('2025-03-03', 'yesterday.jsonl'),
      path.join('2025-03-04', 's1.jsonl'),
      path.join('2025-03-04', 'today.jsonl'),
    ]);
    expect(log.stats()).toMatchObject({ written: 1, prunedFiles: 1, prunedBytes: 60 * KiB, warnings: 1 });
    expect(warnings[0]).toMatch(/reached its cap of 262144 bytes: deleted its 1 oldest file\(s\) \(61440 bytes, days 2025-02-01\)/);
  });

  it('never deletes yesterday or today: drops new records instead, then resumes once there is room', async () => {
    await put('2025-03-03/yesterday.jsonl', 100 * KiB);
    await put('2025-03-04/today.jsonl', 160 * KiB);
    const log = open({ maxRecordBytes: 32 * KiB, maxFileBytes: 32 * KiB, maxTotalBytes: 256 * KiB, fullRetryMs: 60_000 });
    log.append(rec('c1'));
    await log.flush();
    log.append(rec('c2'));
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 0, droppedFull: 2, dropped: 2, scans: 1, prunedFiles: 0 });
    expect(existsSync(path.join(dir, '2025-03-03', 'yesterday.jsonl'))).toBe(true);
    expect(warnings).toHaveLength(1);

    await rm(path.join(dir, '2025-03-04', 'today.jsonl'));
    log.append(rec('c3'));
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 0, scans: 1 }); // still within the retry time
    clock = new Date(clock.getTime() + 60_000);
    log.append(rec('c4'));
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 1, droppedFull: 3, scans: 2 });
    expect(warnings[1]).toMatch(/has room again/);
  });

  it('keeps appending cheap: no I/O in append, one write per group, one folder scan per file part', async () => {
    const log = open({ maxRecordBytes: 32 * KiB, maxFileBytes: 128 * KiB, maxBatch: 200 });
    for (let i = 0; i < 800; i += 1) log.append(attack(`a${i}`));
    // Appends only serialise into memory; nothing has touched the disk yet.
    expect(log.stats()).toMatchObject({ appended: 800, writes: 0, scans: 0 });
    expect(existsSync(path.join(dir, '2025-03-04'))).toBe(false);
    await log.flush();
    const stats = log.stats();
    const parts = Object.keys(await sizes(dir)).length;
    expect(stats.written).toBe(800);
    expect(stats.rotations).toBe(parts - 1);
    expect(parts).toBeGreaterThan(3);
    // A write per group of 200, plus one more for each group a rotation split.
    expect(stats.writes).toBeLessThanOrEqual(800 / 200 + stats.rotations);
    // The folder is measured once per maxFileBytes granted, not per append.
    expect(stats.scans).toBeLessThanOrEqual(parts + 1);
  });

  it('survives a warning listener that throws', async () => {
    await put('2025-03-04/today.jsonl', 300 * KiB);
    const log = open({
      maxRecordBytes: 32 * KiB,
      maxFileBytes: 32 * KiB,
      maxTotalBytes: 256 * KiB,
      onWarning: () => {
        throw new Error('listener broke');
      },
    });
    log.append(rec('c1'));
    await expect(log.flush()).resolves.toBeUndefined();
    expect(log.stats()).toMatchObject({ droppedFull: 1, warnings: 1 });
  });

  it.each([
    [{ maxStringChars: 10 }, /maxStringChars is 10: use an integer from 64/],
    [{ maxArgsBytes: 100 }, /maxArgsBytes is 100: use an integer from 1024 to 65536/],
    [{ maxResultBytes: 128 * KiB }, /maxResultBytes is 131072: use an integer from 1024 to 65536/],
    [{ maxFileBytes: 1000 }, /maxFileBytes is 1000: use an integer from 65536/],
    [{ maxFileBytes: 64 * KiB, maxTotalBytes: 32 * KiB }, /maxTotalBytes is 32768: use an integer from 65536/],
    [{ fullRetryMs: -5 }, /fullRetryMs is -5/],
  ])('rejects bad bound options %j', (bad, message) => {
    expect(() => createAuditLog({ dir, sessionId: 's1', ...bad })).toThrow(message);
  });
});
