import { mkdir, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { throwIfAborted } from '../abort.js';
import { KiwiError, describeError } from '../errors.js';

/** One line of `.ai/logs/audit/<YYYY-MM-DD>/<session>.jsonl`: one tool call, allowed or denied. */
export interface AuditRecord {
  /** ISO time the call started. */
  ts: string;
  /** The conversation (chat request or MCP session) the call belongs to. */
  session: string;
  /** The client that asked (its key's name, or `local`). */
  client?: string;
  call_id: string;
  tool: string;
  /** As requested; capped by the writer with a truncation marker. */
  args: unknown;
  decision: 'allow' | 'deny';
  /** Why it was denied, or which rule allowed it. */
  reason?: string;
  /** Summary of the result; capped by the writer. */
  result?: unknown;
  error?: { code: string; message: string };
  duration_ms: number;
  stuck?: boolean;
  /** cli | gateway | mcp | prefetch */
  source?: string;
  /** The call id of the speculative (prefetch) call whose result this call reused instead of running again. */
  reused?: string;
}

export interface AuditLogOptions {
  /** e.g. `<project>/.ai/logs/audit`; date folders are created under it. */
  dir: string;
  sessionId: string;
  /** How long an append may wait for company before its group is written. Default 50. */
  flushIntervalMs?: number;
  /** Most records in one group commit. Default 256. */
  maxBatch?: number;
  /** Cap on one serialised line, newline included. Default 64 KiB, at least 32 KiB. */
  maxRecordBytes?: number;
  /** Cap on bytes waiting to be written; past it appends are dropped and reported. Default 16 MiB. */
  maxPendingBytes?: number;
  now?: () => Date;
}

export interface AuditLogStats {
  appended: number;
  written: number;
  /** Group commits done: one `write` + `fsync` each. */
  writes: number;
  dropped: number;
}

export interface AuditLog {
  /** Buffers the record; never throws. Problems surface on the next `flush()`/`close()`. */
  append(record: AuditRecord): void;
  /** Resolves once every record appended so far is on disk; rejects with the first write error since the last flush. */
  flush(options?: { signal?: AbortSignal }): Promise<void>;
  /** Flushes and closes the file; later appends are dropped. Idempotent. */
  close(options?: { signal?: AbortSignal }): Promise<void>;
  /** The file records dated `date` (default: now) go to. */
  path(date?: Date): string;
  stats(): AuditLogStats;
}

export const SESSION_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
export const TRUNCATED_KEY = '$truncated';

const MIN_RECORD_BYTES = 32 * 1024;
const SCAN_CHUNK = 64 * 1024;
// Per-field caps on strings keep the fixed part of a record well under MIN_RECORD_BYTES even if
// every character needs a six-byte JSON escape, so only args/result ever need the budget split.
const STRING_CAPS = { ts: 64, session: 128, call_id: 128, tool: 256, reason: 1024, code: 64, message: 1024, source: 32 };

/** Throws INVALID_INPUT unless `id` is safe to use as a file name. */
export function validateSessionId(id: unknown): string {
  if (typeof id !== 'string' || !SESSION_ID_PATTERN.test(id)) {
    throw new KiwiError(
      'INVALID_INPUT',
      `invalid audit session id ${JSON.stringify(String(id)).slice(0, 80)}: use 1-128 characters from A-Z a-z 0-9 _ . -`,
    );
  }
  return id;
}

/** UTC `YYYY-MM-DD`, the name of the folder that holds a day's audit files. */
export function auditDateFolder(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new KiwiError('INVALID_INPUT', 'audit date is not a valid Date: pass a real point in time');
  return date.toISOString().slice(0, 10);
}

export function createAuditLog(options: AuditLogOptions): AuditLog {
  const sessionId = validateSessionId(options.sessionId);
  if (typeof options.dir !== 'string' || options.dir.length === 0) {
    throw new KiwiError('INVALID_INPUT', 'audit log dir is empty: pass the folder for audit files, e.g. <project>/.ai/logs/audit');
  }
  const dir = resolve(options.dir);
  const flushIntervalMs = checkInt('flushIntervalMs', options.flushIntervalMs ?? 50, 0, 60_000);
  const maxBatch = checkInt('maxBatch', options.maxBatch ?? 256, 1, 100_000);
  const maxRecordBytes = checkInt('maxRecordBytes', options.maxRecordBytes ?? 64 * 1024, MIN_RECORD_BYTES, 64 * 1024 * 1024);
  const maxPendingBytes = checkInt('maxPendingBytes', options.maxPendingBytes ?? 16 * 1024 * 1024, maxRecordBytes, 2 ** 31);
  const now = options.now ?? (() => new Date());

  const pending: { file: string; line: string; bytes: number }[] = [];
  let pendingBytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let draining: Promise<void> | undefined;
  let current: { file: string; handle: FileHandle } | undefined;
  let failure: { error: KiwiError; lost: number } | undefined;
  let closing: Promise<void> | undefined;
  const counts: AuditLogStats = { appended: 0, written: 0, writes: 0, dropped: 0 };

  const fileFor = (date: Date): string => join(dir, auditDateFolder(date), `${sessionId}.jsonl`);

  function fail(message: string, lost: number, cause?: unknown): void {
    counts.dropped += lost;
    if (failure) failure.lost += lost;
    else failure = { error: new KiwiError('INTERNAL', message, { cause }), lost };
  }

  function append(record: AuditRecord): void {
    if (closing) {
      fail('an audit record was appended after close(): create a new audit log for further calls', 1);
      return;
    }
    let line: string;
    let file: string;
    try {
      line = serializeAuditRecord(record, maxRecordBytes - 1) + '\n';
      const started = new Date(typeof record.ts === 'string' ? record.ts : NaN);
      file = fileFor(Number.isNaN(started.getTime()) ? now() : started);
    } catch (error) {
      fail(`could not serialise an audit record: ${describeError(error)}`, 1, error);
      return;
    }
    const bytes = Buffer.byteLength(line);
    if (pendingBytes + bytes > maxPendingBytes) {
      fail(`the audit log fell behind: over ${maxPendingBytes} bytes were waiting for ${dir}; check that the disk is not stalled or full`, 1);
      return;
    }
    pending.push({ file, line, bytes });
    pendingBytes += bytes;
    counts.appended += 1;
    if (pending.length >= maxBatch) void startDrain();
    else if (!timer && !draining) timer = setTimeout(onTimer, flushIntervalMs);
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
      for (const group of groupByFile(batch)) {
        try {
          await writeGroup(group.file, group.text);
          counts.written += group.count;
          counts.writes += 1;
        } catch (error) {
          const reason = `could not write the audit log ${group.file}: ${describeError(error)}`;
          fail(`${reason}; check that the folder is writable and the disk has space`, group.count, error);
          // Reopening repairs whatever part of this group reached the file.
          await closeCurrent();
        }
      }
    }
  }

  async function writeGroup(file: string, text: string): Promise<void> {
    if (current?.file !== file) {
      await closeCurrent();
      current = { file, handle: await openForAppend(file) };
    }
    const { handle } = current;
    const buffer = Buffer.from(text);
    for (let offset = 0; offset < buffer.length; ) offset += (await handle.write(buffer, offset, buffer.length - offset)).bytesWritten;
    await handle.sync();
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
    path: (date) => fileFor(date ?? now()),
    stats: () => ({ ...counts }),
  };
}

/**
 * One JSON line (without the newline) of at most `maxBytes` bytes. Strings are cut short, and
 * args/result that do not fit are replaced by a `{ $truncated, bytes, preview }` marker, so the
 * line stays valid JSON with the record's shape.
 */
export function serializeAuditRecord(record: AuditRecord, maxBytes: number): string {
  const str = (value: unknown, max: number): string => JSON.stringify(capString(value, max));
  const fields: [string, string | undefined][] = [
    ['ts', str(record.ts, STRING_CAPS.ts)],
    ['session', str(record.session, STRING_CAPS.session)],
    ['client', record.client === undefined ? undefined : str(record.client, STRING_CAPS.session)],
    ['call_id', str(record.call_id, STRING_CAPS.call_id)],
    ['tool', str(record.tool, STRING_CAPS.tool)],
    ['args', undefined],
    ['decision', record.decision === 'allow' ? '"allow"' : '"deny"'],
    ['reason', record.reason === undefined ? undefined : str(record.reason, STRING_CAPS.reason)],
    ['result', undefined],
    ['error', record.error === undefined ? undefined : `{"code":${str(record.error.code, STRING_CAPS.code)},"message":${str(record.error.message, STRING_CAPS.message)}}`],
    ['duration_ms', String(Number.isFinite(record.duration_ms) ? Math.max(0, record.duration_ms) : 0)],
    ['stuck', record.stuck === undefined ? undefined : String(record.stuck === true)],
    ['source', record.source === undefined ? undefined : str(record.source, STRING_CAPS.source)],
    ['reused', record.reused === undefined ? undefined : str(record.reused, STRING_CAPS.call_id)],
  ];
  const args = safeJson(record.args);
  const result = safeJson(record.result);
  const argsBytes = args === undefined ? 0 : byteLength(args);
  const resultBytes = result === undefined ? 0 : byteLength(result);
  const fixedBytes = fields.reduce((sum, [key, json]) => sum + (json === undefined ? 0 : key.length + 4 + byteLength(json)), 2);
  // The keys and separators of args/result themselves.
  const available = maxBytes - fixedBytes - 20;
  let argsBudget = argsBytes;
  let resultBudget = resultBytes;
  if (argsBytes + resultBytes > available) {
    const half = Math.floor(available / 2);
    argsBudget = argsBytes <= half ? argsBytes : resultBytes <= half ? available - resultBytes : half;
    resultBudget = available - argsBudget;
  }
  const fit = (json: string | undefined, bytes: number, budget: number): string | undefined =>
    json === undefined || bytes <= budget ? json : truncationMarker(json, budget);
  const byKey = new Map(fields);
  byKey.set('args', fit(args, argsBytes, argsBudget));
  byKey.set('result', fit(result, resultBytes, resultBudget));
  const parts: string[] = [];
  for (const [key, json] of byKey) if (json !== undefined) parts.push(`"${key}":${json}`);
  return `{${parts.join(',')}}`;
}

async function openForAppend(file: string): Promise<FileHandle> {
  await mkdir(dirname(file), { recursive: true });
  const handle = await open(file, 'a');
  try {
    const { size } = await handle.stat();
    if (size > 0) await repairTornTail(file, handle, size);
    await syncDirectory(dirname(file));
    return handle;
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/** A crash mid-write can leave a partial last line; cut the file back to its last newline. */
async function repairTornTail(file: string, appender: FileHandle, size: number): Promise<void> {
  const reader = await open(file, 'r');
  let keep = 0;
  try {
    const chunk = Buffer.alloc(Math.min(SCAN_CHUNK, size));
    let end = size;
    while (end > 0) {
      const length = Math.min(chunk.length, end);
      const { bytesRead } = await reader.read(chunk, 0, length, end - length);
      const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (newline !== -1) {
        keep = end - length + newline + 1;
        break;
      }
      end -= length;
    }
  } finally {
    await reader.close();
  }
  if (keep === size) return;
  await appender.truncate(keep);
  await appender.sync();
}

/** Makes a new file's directory entry durable; best effort, as not every platform can (Windows). */
async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r').catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close().catch(() => undefined);
}

function groupByFile(batch: readonly { file: string; line: string }[]): { file: string; text: string; count: number }[] {
  const groups: { file: string; text: string; count: number }[] = [];
  for (const { file, line } of batch) {
    const last = groups[groups.length - 1];
    if (last?.file === file) {
      last.text += line;
      last.count += 1;
    } else {
      groups.push({ file, text: line, count: 1 });
    }
  }
  return groups;
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch (error) {
    return JSON.stringify({ [TRUNCATED_KEY]: true, unserializable: describeError(error).slice(0, 200) });
  }
}

function truncationMarker(json: string, budget: number): string {
  const bytes = byteLength(json);
  let take = Math.max(0, budget - 64);
  for (;;) {
    const marker = JSON.stringify({ [TRUNCATED_KEY]: true, bytes, preview: json.slice(0, take) });
    const over = byteLength(marker) - budget;
    if (over <= 0 || take === 0) return marker;
    take = Math.max(0, take - over);
  }
}

function capString(value: unknown, max: number): string {
  const text = typeof value === 'string' ? value : String(value);
  return text.length <= max ? text : `${text.slice(0, max - 16)}…[truncated]`;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text);
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
