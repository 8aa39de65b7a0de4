import type { FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError, describeError } from '../base/errors.js';
import { openForAppend, writeAll } from './append-file.js';
import { createAuditDiskBudget } from './audit-disk-budget.js';
import { auditDateFolder, auditFileName, listAuditFiles, validateSessionId } from './audit-files.js';
import { MIN_LINE_BYTES, serializeAuditRecord } from './audit-record.js';
import type { AuditRecord, RecordCaps } from './audit-record.js';

export interface AuditLogOptions {
  /** e.g. `<project>/.ai/logs/audit`; date folders are created under it. */
  dir: string;
  sessionId: string;
  /**
   * How long an append may wait for company before its group is written. Default 0: a group is
   * written as soon as the one before it ends, so under load many records share one fsync and
   * alone a record waits only for its own (the call's result waits for it: audit-stage.ts).
   */
  flushIntervalMs?: number;
  /** Most records in one group commit. Default 256. */
  maxBatch?: number;
  /** Cap on one serialised line, newline included; the last resort behind the field caps. Default 64 KiB, at least 32 KiB. */
  maxRecordBytes?: number;
  /** Cap on bytes waiting to be written; past it appends are dropped and reported. Default 16 MiB. */
  maxPendingBytes?: number;
  /**
   * Strings in args and result longer than this become `{ $truncated, bytes, sha256, preview }`
   * keeping the first half. Default 1024: a path, a command or a query fits; a pasted file or an
   * attack payload does not, and its hash still identifies it.
   */
  maxStringChars?: number;
  /** Cap on the JSON of a record's args after string caps (many keys, long arrays). Default 8 KiB. */
  maxArgsBytes?: number;
  /** Cap on the JSON of a record's result summary. Default 8 KiB. */
  maxResultBytes?: number;
  /** A file that would grow past this is continued in `<session>+1.jsonl`, `+2`, … Default 16 MiB. */
  maxFileBytes?: number;
  /** Cap on all audit files under `dir` together; see `createAuditDiskBudget` for what gives way. Default 1 GiB. */
  maxTotalBytes?: number;
  /** Once the folder is full, how long records are dropped before it is measured again. Default 60 s. */
  fullRetryMs?: number;
  /** Told when old files are deleted or records dropped for the total cap. Default: `process.emitWarning`. */
  onWarning?: (message: string) => void;
  now?: () => Date;
}

export interface AuditLogStats {
  appended: number;
  written: number;
  /** Group commits done: one `write` + `fsync` each. */
  writes: number;
  /** Records lost for any reason: write errors, falling behind, the total cap. */
  dropped: number;
  /** Of those, records dropped because the audit folder was at its total cap. */
  droppedFull: number;
  /** Files continued in a new part because they reached `maxFileBytes`. */
  rotations: number;
  /** Times the audit folder was measured; once per `maxFileBytes` written, or per retry while full. */
  scans: number;
  prunedFiles: number;
  prunedBytes: number;
  warnings: number;
}

export interface AuditLog {
  /**
   * Queues the record; resolves once it is durable, or lost (a write error, the caps): problems
   * surface on the next `flush()`/`close()`, never here. Never rejects.
   */
  append(record: AuditRecord): Promise<void>;
  /** Resolves once every record appended so far is on disk; rejects with the first write error since the last flush. */
  flush(options?: { signal?: AbortSignal }): Promise<void>;
  /** Flushes and closes the file; later appends are dropped. Idempotent. */
  close(options?: { signal?: AbortSignal }): Promise<void>;
  /** The first file of the day `date` (default: now); later parts of it are `<session>+<n>.jsonl`. */
  path(date?: Date): string;
  stats(): AuditLogStats;
}

const MiB = 1024 * 1024;
const SETTLED = Promise.resolve();

interface Pending { day: string; line: string; bytes: number; settle: () => void }
interface OpenFile { day: string; part: number; path: string; handle: FileHandle; size: number }

export function createAuditLog(options: AuditLogOptions): AuditLog {
  const sessionId = validateSessionId(options.sessionId);
  if (typeof options.dir !== 'string' || options.dir.length === 0) {
    throw new KiwiError('INVALID_INPUT', 'audit log dir is empty: pass the folder for audit files, e.g. <project>/.ai/logs/audit');
  }
  const dir = resolve(options.dir);
  const flushIntervalMs = checkInt('flushIntervalMs', options.flushIntervalMs ?? 0, 0, 60_000);
  const maxBatch = checkInt('maxBatch', options.maxBatch ?? 256, 1, 100_000);
  const maxRecordBytes = checkInt('maxRecordBytes', options.maxRecordBytes ?? 64 * 1024, MIN_LINE_BYTES, 64 * MiB);
  const maxPendingBytes = checkInt('maxPendingBytes', options.maxPendingBytes ?? 16 * MiB, maxRecordBytes, 2 ** 31);
  const maxStringChars = checkInt('maxStringChars', options.maxStringChars ?? 1024, 64, 1024 * 1024);
  const maxArgsBytes = checkInt('maxArgsBytes', options.maxArgsBytes ?? 8 * 1024, 1024, maxRecordBytes);
  const maxResultBytes = checkInt('maxResultBytes', options.maxResultBytes ?? 8 * 1024, 1024, maxRecordBytes);
  const maxFileBytes = checkInt('maxFileBytes', options.maxFileBytes ?? 16 * MiB, maxRecordBytes, 2 ** 40);
  const maxTotalBytes = checkInt('maxTotalBytes', options.maxTotalBytes ?? 1024 * MiB, maxFileBytes, 2 ** 50);
  const fullRetryMs = checkInt('fullRetryMs', options.fullRetryMs ?? 60_000, 0, 24 * 60 * 60 * 1000);
  const onWarning = options.onWarning ?? ((message: string) => process.emitWarning(message, { code: 'KIWI_AUDIT' }));
  const now = options.now ?? (() => new Date());
  const caps: RecordCaps = { maxLineBytes: maxRecordBytes - 1, maxStringChars, maxArgsBytes, maxResultBytes };

  const pending: Pending[] = [];
  let pendingBytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let draining: Promise<void> | undefined;
  let current: OpenFile | undefined;
  let failure: { error: KiwiError; lost: number } | undefined;
  let closing: Promise<void> | undefined;
  const counts = { appended: 0, written: 0, writes: 0, dropped: 0, droppedFull: 0, rotations: 0, warnings: 0 };
  const warn = (message: string): void => {
    counts.warnings += 1;
    try {
      onWarning(message);
    } catch {
      // A broken listener must not stop the audit log.
    }
  };
  const budget = createAuditDiskBudget({ dir, maxTotalBytes, grantBytes: maxFileBytes, retryMs: fullRetryMs, now, warn });

  function fail(message: string, lost: number, cause?: unknown): void {
    counts.dropped += lost;
    if (failure) failure.lost += lost;
    else failure = { error: new KiwiError('INTERNAL', message, { cause }), lost };
  }

  function append(record: AuditRecord): Promise<void> {
    if (closing) {
      fail('an audit record was appended after close(): create a new audit log for further calls', 1);
      return SETTLED;
    }
    let line: string;
    let day: string;
    try {
      line = serializeAuditRecord(record, caps) + '\n';
      const started = new Date(typeof record.ts === 'string' ? record.ts : NaN);
      day = auditDateFolder(Number.isNaN(started.getTime()) ? now() : started);
    } catch (error) {
      fail(`could not serialise an audit record: ${describeError(error)}`, 1, error);
      return SETTLED;
    }
    const bytes = Buffer.byteLength(line);
    if (pendingBytes + bytes > maxPendingBytes) {
      fail(`the audit log fell behind: over ${maxPendingBytes} bytes were waiting for ${dir}; check that the disk is not stalled or full`, 1);
      return SETTLED;
    }
    let settle!: () => void;
    const promise = new Promise<void>((resolveWritten) => (settle = resolveWritten));
    pending.push({ day, line, bytes, settle });
    pendingBytes += bytes;
    counts.appended += 1;
    if (pending.length >= maxBatch) void startDrain();
    else if (!timer && !draining) timer = setTimeout(onTimer, flushIntervalMs);
    return promise;
  }

  function onTimer(): void {
    timer = undefined;
    void startDrain();
  }

  function startDrain(): Promise<void> {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    // One drain at a time keeps writes serialised; appends made meanwhile form the next group.
    draining ??= drain().finally(() => {
      draining = undefined;
      // An append made between the drain's last check and now would otherwise wait forever.
      if (pending.length > 0 && !timer) timer = setTimeout(onTimer, flushIntervalMs);
    });
    return draining;
  }

  async function drain(): Promise<void> {
    while (pending.length > 0) {
      const batch = pending.splice(0, maxBatch);
      for (const entry of batch) pendingBytes -= entry.bytes;
      for (const group of groupByDay(batch)) await writeDay(group);
      for (const entry of batch) entry.settle();
    }
  }

  /** Writes one day's records, one write + fsync per file part they land in. */
  async function writeDay(group: Pending[]): Promise<void> {
    let start = 0;
    while (start < group.length) {
      let end = start;
      try {
        const file = await fileFor((group[start] as Pending).day, (group[start] as Pending).bytes);
        let bytes = 0;
        do bytes += (group[end++] as Pending).bytes;
        while (end < group.length && file.size + bytes + (group[end] as Pending).bytes <= maxFileBytes);
        if (!(await budget.take(bytes))) {
          counts.dropped += end - start;
          counts.droppedFull += end - start;
        } else {
          await writeAll(file.handle, group.slice(start, end).map((entry) => entry.line).join(''));
          file.size += bytes;
          counts.written += end - start;
          counts.writes += 1;
        }
        start = end;
      } catch (error) {
        const reason = `could not write the audit log ${current?.path ?? join(dir, (group[start] as Pending).day)}: ${describeError(error)}`;
        fail(`${reason}; check that the folder is writable and the disk has space`, group.length - start, error);
        // Reopening repairs whatever part of this group reached the file.
        await closeCurrent();
        return;
      }
    }
  }

  /** The open part for `day`, moving on to the next part when `nextBytes` would take it past `maxFileBytes`. */
  async function fileFor(day: string, nextBytes: number): Promise<OpenFile> {
    if (current && current.day !== day) await closeCurrent();
    // A restarted session goes on in its newest part.
    current ??= await openPart(day, Math.max(0, ...(await listAuditFiles(join(dir, day))).filter((f) => f.session === sessionId).map((f) => f.part)));
    if (current.size > 0 && current.size + nextBytes > maxFileBytes) {
      const next = current.part + 1;
      await closeCurrent();
      current = await openPart(day, next);
      counts.rotations += 1;
    }
    return current;
  }

  async function openPart(day: string, part: number): Promise<OpenFile> {
    const path = join(dir, day, auditFileName(sessionId, part));
    const { handle, size } = await openForAppend(path);
    return { day, part, path, handle, size };
  }

  async function closeCurrent(): Promise<void> {
    const handle = current?.handle;
    current = undefined;
    await handle?.close().catch(() => undefined);
  }

  function takeFailure(): void {
    if (!failure) return;
    const { error, lost } = failure;
    failure = undefined;
    throw new KiwiError(error.code, `${error.message} (${lost} record(s) lost)`, { cause: error.cause, details: { lost } });
  }

  async function flushAll(): Promise<void> {
    while (pending.length > 0 || draining) await startDrain();
  }

  return {
    append,
    async flush(opts) {
      throwIfAborted(opts?.signal, 'audit flush');
      await untilAborted(flushAll(), opts?.signal, 'audit flush');
      takeFailure();
    },
    async close(opts) {
      throwIfAborted(opts?.signal, 'audit close');
      closing ??= flushAll().then(closeCurrent);
      await untilAborted(closing, opts?.signal, 'audit close');
      takeFailure();
    },
    path: (date) => join(dir, auditDateFolder(date ?? now()), auditFileName(sessionId, 0)),
    stats: () => {
      const { scans, prunedFiles, prunedBytes } = budget.stats();
      return { ...counts, scans, prunedFiles, prunedBytes };
    },
  };
}

/** Consecutive records of the same day, in order. */
function groupByDay(batch: readonly Pending[]): Pending[][] {
  const groups: Pending[][] = [];
  for (const entry of batch) {
    const last = groups[groups.length - 1];
    if (last && (last[0] as Pending).day === entry.day) last.push(entry);
    else groups.push([entry]);
  }
  return groups;
}

function checkInt(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new KiwiError('INVALID_INPUT', `audit log option ${name} is ${String(value)}: use an integer from ${min} to ${max}`);
  }
  return value;
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (!signal) return work;
  // The write itself cannot be cancelled once started; only the wait for it is.
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = (): void => reject(new KiwiError('TOOL_CANCELLED', `${what} was cancelled; the write goes on in the background`));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolvePromise, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
