import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { trainTransitions, type TrainProgress } from '../../src/prefetch/train-transitions.js';

const AUDIT = path.resolve(import.meta.dirname, '../fixtures/transitions/audit');

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function record(session: string, ts: string, tool: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ ts, session, call_id: `${session}-${ts}`, tool, args: {}, decision: 'allow', duration_ms: 1, source: 'gateway', ...extra });
}

describe('trainTransitions on the fixture audit log', () => {
  it('learns only allowed, executed agent calls, in start order per session, across days', async () => {
    const progress: TrainProgress[] = [];
    const report = await trainTransitions({ auditDir: AUDIT, onProgress: (p) => progress.push(p) });
    // alpha (two days): search → read → count → read → read; beta: search → read; gamma: search → read → read.
    expect(report).toMatchObject({
      sessions: 3,
      calls: 10,
      files: 5,
      skipped: 3, // a line that is not JSON, one that is not a record, the torn last line of beta
      torn: 1,
      ignored: { denied: 2, failed: 1, speculative: 2, other: 1 },
    });
    const json = report.model.toJSON();
    expect(json.tools).toEqual([['read_file', 6], ['search_files', 3], ['word_count', 1]]);
    expect(json.start).toEqual([['search_files', 3]]);
    expect(Object.fromEntries(json.transitions)).toEqual({
      search_files: [['read_file', 3]],
      read_file: [['read_file', 2], ['word_count', 1]],
      word_count: [['read_file', 1]],
    });
    expect(report.model.next('search_files', 1)[0]?.tool).toBe('read_file');
    expect(progress.at(-1)).toMatchObject({ filesDone: 5, filesTotal: 5, calls: 10 });
  });

  it('passes model options on', async () => {
    const report = await trainTransitions({ auditDir: AUDIT, model: { maxSuccessors: 1, smoothing: 0 } });
    expect(report.model.next('read_file', 3)).toEqual([{ tool: 'read_file', p: 1 }]);
  });

  it('a missing audit folder trains on nothing', async () => {
    const report = await trainTransitions({ auditDir: path.join(tmpdir(), 'kiwi-no-such-audit-dir') });
    expect(report).toMatchObject({ sessions: 0, calls: 0, files: 0, skipped: 0 });
    expect(report.model.stats().observations).toBe(0);
  });
});

describe('trainTransitions on hand-made logs', () => {
  const write = (relative: string, text: string): string => {
    dir ??= mkdtempSync(path.join(tmpdir(), 'kiwi-train-'));
    const file = path.join(dir, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    return dir;
  };

  it('skips lines over the length cap without losing the lines around them', async () => {
    const auditDir = write(
      '2025-01-01/s.jsonl',
      [
        record('s', '2025-01-01T00:00:00Z', 'a'),
        record('s', '2025-01-01T00:00:01Z', 'huge', { args: { text: 'x'.repeat(5000) } }),
        record('s', '2025-01-01T00:00:02Z', 'b'),
        '',
      ].join('\n'),
    );
    const report = await trainTransitions({ auditDir, maxLineBytes: 1000 });
    expect(report).toMatchObject({ calls: 2, skipped: 1, torn: 0 });
    expect(report.model.toJSON().transitions).toEqual([['a', [['b', 1]]]]);
  });

  it('reads lines split across read chunks, CRLF endings and a torn line longer than the cap', async () => {
    const long = 'y'.repeat(70 * 1024);
    const auditDir = write(
      '2025-01-01/s.jsonl',
      `${record('s', '2025-01-01T00:00:00Z', 'a', { args: { long } })}\r\n${record('s', '2025-01-01T00:00:01Z', 'b')}\r\n{"ts":"${'z'.repeat(2000)}`,
    );
    const report = await trainTransitions({ auditDir, maxLineBytes: 1500 });
    // The 70 KiB line is over the cap too; only `b` is learned.
    expect(report).toMatchObject({ calls: 1, skipped: 2, torn: 1 });
    const wide = await trainTransitions({ auditDir });
    expect(wide).toMatchObject({ calls: 2, skipped: 1, torn: 1 });
  });

  it('reads a session rotated into parts as one session, in part order', async () => {
    const line = (session: string, second: number, tool: string): string => `${record(session, `2025-01-01T00:00:${String(second).padStart(2, '0')}Z`, tool)}\n`;
    write('2025-01-01/s+2.jsonl', line('s', 4, 'd'));
    write('2025-01-01/s.jsonl', line('s', 1, 'a') + line('s', 2, 'b'));
    write('2025-01-01/s+1.jsonl', line('s', 3, 'c'));
    // `s.1` is another session, not a part of `s`.
    const auditDir = write('2025-01-01/s.1.jsonl', line('s.1', 5, 'x') + line('s.1', 6, 'y'));
    const report = await trainTransitions({ auditDir });
    expect(report).toMatchObject({ sessions: 2, files: 4, calls: 6 });
    expect(Object.fromEntries(report.model.toJSON().transitions)).toEqual({ a: [['b', 1]], b: [['c', 1]], c: [['d', 1]], x: [['y', 1]] });
  });

  it('ignores files that are not session logs and folders that are not days', async () => {
    write('2025-01-01/bad name!.jsonl', `${record('x', '2025-01-01T00:00:00Z', 'a')}\n`);
    write('2025-01-01/notes.txt', `${record('x', '2025-01-01T00:00:00Z', 'a')}\n`);
    const auditDir = write('misc/s.jsonl', `${record('x', '2025-01-01T00:00:00Z', 'a')}\n`);
    expect(await trainTransitions({ auditDir })).toMatchObject({ files: 0, calls: 0 });
  });

  it('stops when aborted, with a clear error', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(trainTransitions({ auditDir: AUDIT, signal: controller.signal })).rejects.toSatisfy(
      (error) => isKiwiError(error, 'TOOL_CANCELLED') && /training the predictor/.test((error as Error).message),
    );
    const late = new AbortController();
    await expect(trainTransitions({ auditDir: AUDIT, signal: late.signal, onProgress: () => late.abort() })).rejects.toThrow(/cancelled/);
  });

  it('rejects a bad line cap', async () => {
    await expect(trainTransitions({ auditDir: AUDIT, maxLineBytes: 0 })).rejects.toThrow(/maxLineBytes is 0: use a positive integer/);
  });
});
