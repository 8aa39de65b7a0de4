import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import type { AuditLog } from '../../src/audit/audit-log.js';
import { serializeAuditRecord } from '../../src/audit/audit-record.js';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { TRUNCATED_KEY } from '../../src/audit/cap-audit-value.js';
import { readAuditTail, readAuditTailWithStats } from '../../src/audit/audit-reader.js';
import { KiwiError } from '../../src/base/errors.js';

let dir: string;
const logs: AuditLog[] = [];
const fixedNow = () => new Date('2025-03-04T10:00:00.000Z');

function open(options: Partial<Parameters<typeof createAuditLog>[0]> = {}): AuditLog {
  const log = createAuditLog({ dir, sessionId: 's1', now: fixedNow, ...options });
  logs.push(log);
  return log;
}

function rec(callId: string, extra: Partial<AuditRecord> = {}): AuditRecord {
  return { ts: '2025-03-04T09:59:59.000Z', session: 's1', call_id: callId, tool: 'fs.read', args: { path: `${callId}.txt` }, decision: 'allow', duration_ms: 3, ...extra };
}

/** Field caps as wide as the line, so only the line cap is at work. */
function wide(maxLineBytes: number) {
  return { maxLineBytes, maxStringChars: 1024 * 1024, maxArgsBytes: 1024 * 1024, maxResultBytes: 1024 * 1024 };
}

async function lines(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text.slice(0, -1).split('\n');
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kiwi-audit-log-'));
});

afterEach(async () => {
  for (const log of logs.splice(0)) await log.close().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

describe('createAuditLog', () => {
  it('resolves an append once its record is on disk, with no wait for company by default', async () => {
    const log = open();
    await log.append(rec('c1'));
    // Read without flush or close: the record is already in the file.
    expect((await lines(log.path())).map((l) => (JSON.parse(l) as AuditRecord).call_id)).toEqual(['c1']);
    await Promise.all([log.append(rec('c2')), log.append(rec('c3'))]);
    expect((await lines(log.path())).map((l) => (JSON.parse(l) as AuditRecord).call_id)).toEqual(['c1', 'c2', 'c3']);
    expect(log.stats()).toMatchObject({ written: 3, dropped: 0 });
  });

  it('round-trips records through the file and the reader', async () => {
    const log = open();
    const records: AuditRecord[] = [
      rec('c1', { reason: 'rule fs.*', result: { bytes: 12 }, source: 'cli' }),
      rec('c2', { decision: 'deny', reason: 'path /etc/passwd is outside the allowed globs', duration_ms: 0 }),
      rec('c3', { error: { code: 'TOOL_TIMEOUT', message: 'took more than 30 s' }, stuck: true, source: 'mcp', args: { ü: ['ß', null, 1.5] } }),
      rec('c4', { source: 'gateway', resolved_by: { model: 'qwen3:0.6b', upstream: 'local', ms: 212, input_tokens: 436, output_tokens: 31, usd: 0.000498 } }),
    ];
    for (const r of records) log.append(r);
    await log.close();
    expect(await readAuditTail({ dir, limit: 10, session: 's1' })).toEqual(records);
    expect((await lines(log.path())).map((l) => JSON.parse(l))).toEqual(records);
  });

  it('keeps a fallback model\'s record whole and well-formed, whatever the caller put in it', () => {
    const odd = { model: 'm"\n'.repeat(200), upstream: 'u', ms: -5, input_tokens: Number.NaN, output_tokens: 3.7, usd: Number.POSITIVE_INFINITY };
    const line = JSON.parse(serializeAuditRecord(rec('c5', { resolved_by: odd }), wide(64 * 1024))) as AuditRecord;
    expect(line.resolved_by).toEqual({ model: expect.stringMatching(/^m"/), upstream: 'u', ms: 0, output_tokens: 4 });
    expect(line.resolved_by?.model.length).toBeLessThanOrEqual(256);
  });

  it('writes the appends made before a flush as one group commit', async () => {
    const log = open({ flushIntervalMs: 60_000 });
    for (let i = 0; i < 25; i += 1) log.append(rec(`c${i}`));
    expect(log.stats()).toMatchObject({ appended: 25, writes: 0 });
    await log.flush();
    expect(log.stats()).toMatchObject({ appended: 25, written: 25, writes: 1, dropped: 0 });
    expect((await lines(log.path())).map((l) => JSON.parse(l).call_id)).toEqual(Array.from({ length: 25 }, (_, i) => `c${i}`));
  });

  it('splits a group at maxBatch and keeps the order', async () => {
    const log = open({ flushIntervalMs: 60_000, maxBatch: 10 });
    for (let i = 0; i < 25; i += 1) log.append(rec(`c${i}`));
    await log.flush();
    expect(log.stats().writes).toBe(3);
    expect((await lines(log.path())).map((l) => JSON.parse(l).call_id)).toEqual(Array.from({ length: 25 }, (_, i) => `c${i}`));
  });

  it('flushes on its own after the interval', async () => {
    const log = open({ flushIntervalMs: 1 });
    log.append(rec('c1'));
    log.append(rec('c2'));
    await vi.waitFor(() => expect(log.stats().written).toBe(2), { timeout: 10_000, interval: 5 });
    expect(await lines(log.path())).toHaveLength(2);
  });

  it('keeps appends made during a write in order, with concurrent flushes', async () => {
    const log = open({ flushIntervalMs: 0, maxBatch: 3 });
    const flushes: Promise<void>[] = [];
    for (let i = 0; i < 40; i += 1) {
      log.append(rec(`c${i}`));
      if (i % 7 === 0) flushes.push(log.flush());
    }
    flushes.push(log.flush());
    await Promise.all(flushes);
    expect((await lines(log.path())).map((l) => JSON.parse(l).call_id)).toEqual(Array.from({ length: 40 }, (_, i) => `c${i}`));
  });

  it('names folders by the UTC date of each record, falling back to the clock', async () => {
    const log = open({ flushIntervalMs: 60_000 });
    log.append(rec('late', { ts: '2024-02-29T23:59:59.999Z' }));
    log.append(rec('early', { ts: '2024-03-01T00:00:00.000Z' }));
    log.append(rec('offset', { ts: '2024-03-01T01:30:00+02:00' }));
    log.append(rec('bad-ts', { ts: 'yesterday' }));
    await log.flush();
    expect(log.path(new Date('2024-02-29T12:00:00Z'))).toBe(path.join(dir, '2024-02-29', 's1.jsonl'));
    expect(log.path()).toBe(path.join(dir, '2025-03-04', 's1.jsonl'));
    expect(() => log.path(new Date('nope'))).toThrow(/audit date is not a valid Date/);
    expect((await lines(path.join(dir, '2024-02-29', 's1.jsonl'))).map((l) => JSON.parse(l).call_id)).toEqual(['late', 'offset']);
    expect((await lines(path.join(dir, '2024-03-01', 's1.jsonl'))).map((l) => JSON.parse(l).call_id)).toEqual(['early']);
    expect((await lines(log.path())).map((l) => JSON.parse(l).call_id)).toEqual(['bad-ts']);
  });

  it.each(['', '../escape', 'a/b', 'a\\b', 'with space', 'ünï', 'x'.repeat(129), 'nul\u0000'])('rejects session id %j', (sessionId) => {
    const attempt = () => createAuditLog({ dir, sessionId });
    expect(attempt).toThrow(KiwiError);
    expect(attempt).toThrow(/invalid audit session id .*A-Z a-z 0-9 _ \. -/);
    try {
      attempt();
    } catch (error) {
      expect((error as KiwiError).code).toBe('INVALID_INPUT');
    }
  });

  it.each([
    [{ dir: '' }, /dir is empty/],
    [{ flushIntervalMs: -1 }, /flushIntervalMs is -1: use an integer from 0/],
    [{ maxBatch: 0 }, /maxBatch is 0/],
    [{ maxBatch: 1.5 }, /maxBatch is 1.5/],
    [{ maxRecordBytes: 1000 }, /maxRecordBytes is 1000: use an integer from 32768/],
  ])('rejects bad options %j', (bad, message) => {
    expect(() => createAuditLog({ dir, sessionId: 's1', ...bad })).toThrow(message);
  });

  it('caps a huge record at maxRecordBytes when the field caps are opened up, keeping valid JSON', async () => {
    const log = open({ maxStringChars: 1024 * 1024, maxArgsBytes: 64 * 1024, maxResultBytes: 64 * 1024 });
    log.append(rec('big', { args: { text: 'a'.repeat(200_000) }, result: { ok: true } }));
    log.append(rec('both', { args: 'é'.repeat(100_000), result: ['\u0001'.repeat(100_000)], reason: 'r'.repeat(50_000) }));
    await log.close();
    const [big, both] = await lines(log.path());
    for (const line of [big, both]) expect(Buffer.byteLength(`${line}\n`)).toBeLessThanOrEqual(64 * 1024);
    const first = JSON.parse(big as string);
    expect(first.args).toMatchObject({ [TRUNCATED_KEY]: true, bytes: 200_011 });
    expect(first.args.preview.startsWith('{"text":"aaa')).toBe(true);
    expect(first.result).toEqual({ ok: true });
    const second = JSON.parse(both as string);
    expect(second.args[TRUNCATED_KEY]).toBe(true);
    expect(second.result[TRUNCATED_KEY]).toBe(true);
    expect(second.reason.length).toBeLessThanOrEqual(1024);
    expect(second.reason).toMatch(/^r+…\[truncated: 50000 bytes, sha256 [0-9a-f]{64}\]$/);
    const read = await readAuditTailWithStats({ dir, limit: 10, session: 's1' });
    expect(read.malformed).toBe(0);
    expect(read.records.map((r) => r.call_id)).toEqual(['big', 'both']);
  });

  it('never throws from append on arguments that cannot be serialised', async () => {
    const log = open();
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => log.append(rec('circ', { args: circular, result: { n: 10n } }))).not.toThrow();
    await log.close();
    const [line] = await lines(log.path());
    const parsed = JSON.parse(line as string);
    expect(parsed.args).toMatchObject({ [TRUNCATED_KEY]: true, unserializable: expect.stringMatching(/circular/i) });
    expect(parsed.result).toMatchObject({ [TRUNCATED_KEY]: true, unserializable: expect.stringMatching(/BigInt/i) });
  });

  it('keeps each line within maxRecordBytes for any field mix', () => {
    for (const size of [0, 10, 20_000, 40_000, 70_000]) {
      const line = serializeAuditRecord(rec('x', { args: 'x'.repeat(size), result: '"'.repeat(size), tool: '\u0002'.repeat(5000) }), wide(32 * 1024 - 1));
      expect(Buffer.byteLength(line)).toBeLessThan(32 * 1024);
      expect(() => JSON.parse(line)).not.toThrow();
    }
  });

  it('repairs a torn tail left by an earlier crash before appending', async () => {
    const file = path.join(dir, '2025-03-04', 's1.jsonl');
    await mkdir(path.dirname(file), { recursive: true });
    const good = [JSON.stringify(rec('old1')), JSON.stringify(rec('old2'))];
    await writeFile(file, `${good.join('\n')}\n{"ts":"2025-03-04T09:`);
    const log = open();
    log.append(rec('new'));
    await log.close();
    expect(await readFile(file, 'utf8')).toBe(`${good.join('\n')}\n${JSON.stringify(rec('new'))}\n`);
    const read = await readAuditTailWithStats({ dir, limit: 10 });
    expect(read).toMatchObject({ malformed: 0, torn: 0 });
    expect(read.records.map((r) => r.call_id)).toEqual(['old1', 'old2', 'new']);
  });

  it('truncates a file holding only a torn line', async () => {
    const file = path.join(dir, '2025-03-04', 's1.jsonl');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, 'x'.repeat(150_000));
    const log = open();
    log.append(rec('new'));
    await log.close();
    expect(await readFile(file, 'utf8')).toBe(`${JSON.stringify(rec('new'))}\n`);
  });

  it('surfaces a write error on the next flush, once, without throwing from append', async () => {
    const blocker = path.join(dir, 'not-a-dir');
    await writeFile(blocker, '');
    const log = createAuditLog({ dir: blocker, sessionId: 's1', now: fixedNow });
    logs.push(log);
    expect(() => log.append(rec('c1'))).not.toThrow();
    const failed = log.flush();
    await expect(failed).rejects.toThrow(KiwiError);
    await expect(failed).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/could not write the audit log .*writable.*\(1 record\(s\) lost\)/) });
    await expect(log.flush()).resolves.toBeUndefined();
    expect(log.stats()).toMatchObject({ appended: 1, written: 0, dropped: 1 });
  });

  it('flushes on close and reports appends made after it', async () => {
    const log = open({ flushIntervalMs: 60_000 });
    log.append(rec('c1'));
    await log.close();
    expect(await lines(log.path())).toHaveLength(1);
    expect(() => log.append(rec('late'))).not.toThrow();
    await expect(log.close()).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/appended after close\(\)/) });
    await expect(log.close()).resolves.toBeUndefined();
    expect(await lines(log.path())).toHaveLength(1);
  });

  it('drops and reports appends past maxPendingBytes instead of growing without bound', async () => {
    const log = open({ flushIntervalMs: 60_000, maxBatch: 100_000, maxRecordBytes: 32 * 1024, maxPendingBytes: 40 * 1024, maxStringChars: 1024 * 1024, maxArgsBytes: 32 * 1024 });
    log.append(rec('a', { args: 'x'.repeat(30_000) }));
    log.append(rec('b', { args: 'x'.repeat(30_000) }));
    await expect(log.flush()).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/fell behind/) });
    expect(log.stats()).toMatchObject({ appended: 1, written: 1, dropped: 1 });
  });

  it('rejects a flush whose signal has fired', async () => {
    const log = open();
    await expect(log.flush({ signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'TOOL_CANCELLED' });
  });
});
