import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError, describeError } from '../base/errors.js';
import { isDateFolder, isMissing, listAuditFiles, listDateFolders, validateSessionId } from './audit-files.js';
import type { AuditFileName } from './audit-files.js';
import { CALL_ITEMS, type AuditRecord } from './audit-record.js';
import { linesFromEnd } from './lines-from-end.js';

/** What a line of an audit file must look like; extra keys are dropped. */
export const auditRecordSchema = z.object({
  ts: z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'ts must be an ISO date-time'),
  session: z.string(),
  client: z.string().optional(),
  call_id: z.string(),
  tool: z.string(),
  item: z.enum(CALL_ITEMS).optional(),
  args: z.unknown().optional(),
  decision: z.enum(['allow', 'deny']),
  reason: z.string().optional(),
  result: z.unknown().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  cancelled: z.string().optional(),
  duration_ms: z.number().nonnegative(),
  stuck: z.boolean().optional(),
  source: z.string().optional(),
  reused: z.string().optional(),
  checkpoint: z.string().optional(),
  notes: z.array(z.string()).optional(),
  approval: z.object({ approved: z.boolean(), decided_by: z.string(), reason: z.string().optional(), waited_ms: z.number().nonnegative() }).optional(),
  help: z.string().optional(),
  sandbox: z.enum(['bwrap', 'podman', 'none']).optional(),
  sandbox_reason: z.string().optional(),
  trace_id: z.string().regex(/^[0-9a-f]{32}$/).optional(),
  resolved_by: z
    .object({
      model: z.string(),
      upstream: z.string(),
      ms: z.number().nonnegative(),
      input_tokens: z.number().int().nonnegative().optional(),
      output_tokens: z.number().int().nonnegative().optional(),
      usd: z.number().nonnegative().optional(),
    })
    .optional(),
  steering: z
    .array(z.object({ event: z.string(), hook: z.string(), decision: z.string(), reason: z.string().optional(), thread: z.string().optional(), attempt: z.number().int().nonnegative() }))
    .optional(),
  attempts: z.number().int().nonnegative().optional(),
});

export interface ReadAuditTailOptions {
  /** The audit root, e.g. `<project>/.ai/logs/audit`. */
  dir: string;
  /** How many records to return at most (1..100000). */
  limit: number;
  /** Only this session's files. */
  session?: string;
  /** Only this UTC day, `YYYY-MM-DD`. */
  date?: string;
  /** Lines longer than this are skipped as malformed. Default 1 MiB. */
  maxLineBytes?: number;
  signal?: AbortSignal;
}

export interface AuditTail {
  /** Oldest first, newest last. */
  records: AuditRecord[];
  /** Lines skipped because they were not JSON, not a record, or too long. */
  malformed: number;
  /** Files whose last line had no newline (a crash mid-write, or a write in progress). */
  torn: number;
  filesRead: number;
}

const MAX_LIMIT = 100_000;

export async function readAuditTail(options: ReadAuditTailOptions): Promise<AuditRecord[]> {
  return (await readAuditTailWithStats(options)).records;
}

/**
 * The last `limit` records, walking date folders from the most recent back and stopping as soon
 * as enough are found. Files are read from their end, so a long log costs only its tail.
 */
export async function readAuditTailWithStats(options: ReadAuditTailOptions): Promise<AuditTail> {
  const { limit, signal } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new KiwiError('INVALID_INPUT', `audit tail limit is ${String(limit)}: use an integer from 1 to ${MAX_LIMIT}`);
  }
  const session = options.session === undefined ? undefined : validateSessionId(options.session);
  if (options.date !== undefined && !isDateFolder(options.date)) {
    throw new KiwiError('INVALID_INPUT', `audit date ${JSON.stringify(options.date).slice(0, 40)} is not a day: use YYYY-MM-DD (UTC)`);
  }
  const maxLineBytes = options.maxLineBytes ?? 1024 * 1024;
  if (!Number.isInteger(maxLineBytes) || maxLineBytes < 1) {
    throw new KiwiError('INVALID_INPUT', `maxLineBytes is ${String(maxLineBytes)}: use a positive integer`);
  }
  throwIfAborted(signal, 'reading the audit log');
  const dir = resolve(options.dir);
  const tail: AuditTail = { records: [], malformed: 0, torn: 0, filesRead: 0 };

  const dates = options.date !== undefined ? [options.date] : (await listDateFolders(dir)).reverse();
  for (const date of dates) {
    const need = limit - tail.records.length;
    if (need <= 0) break;
    const folder = join(dir, date);
    const found: { record: AuditRecord; time: number; order: number }[] = [];
    for (const parts of bySession(await listAuditFiles(folder), session)) {
      // A session's parts were written one after the other: its newest records are in its last part.
      let fromSession: AuditRecord[] = [];
      for (let i = parts.length - 1; i >= 0 && fromSession.length < need; i -= 1) {
        const fromFile = await readFileTail(join(folder, (parts[i] as AuditFileName).name), need - fromSession.length, maxLineBytes, tail, signal);
        fromSession = fromFile.concat(fromSession);
      }
      for (const record of fromSession) found.push({ record, time: Date.parse(record.ts), order: found.length });
    }
    // Sessions of one day interleave; order them by start time, file order breaking ties.
    found.sort((a, b) => a.time - b.time || a.order - b.order);
    tail.records = found.slice(-need).map((f) => f.record).concat(tail.records);
  }
  return tail;
}

/** Each session's files, its parts in order; only `session`'s when given. */
function bySession(files: AuditFileName[], session: string | undefined): AuditFileName[][] {
  const sessions = new Map<string, AuditFileName[]>();
  for (const file of files) {
    if (session !== undefined && file.session !== session) continue;
    const parts = sessions.get(file.session) ?? [];
    parts.push(file);
    sessions.set(file.session, parts);
  }
  return [...sessions.values()];
}

/** Up to `need` valid records from the end of one file, in file order. A missing file is empty. */
async function readFileTail(path: string, need: number, maxLineBytes: number, tail: AuditTail, signal?: AbortSignal): Promise<AuditRecord[]> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if (isMissing(error)) return [];
    throw readError(path, error);
  }
  tail.filesRead += 1;
  const newestFirst: AuditRecord[] = [];
  try {
    const { size } = await handle.stat();
    for await (const line of linesFromEnd(handle, size, maxLineBytes, signal)) {
      if (line.kind === 'torn') tail.torn += 1;
      else if (line.kind === 'oversized') tail.malformed += 1;
      else {
        const record = parseAuditLine(line.text);
        if (record === null) continue;
        if (record === 'malformed') tail.malformed += 1;
        else if (newestFirst.push(record) >= need) break;
      }
    }
  } catch (error) {
    throw error instanceof KiwiError ? error : readError(path, error);
  } finally {
    await handle.close();
  }
  return newestFirst.reverse();
}

/** One line of a file or a row of the shared log: a record, `'malformed'`, or null for a blank line. */
export function parseAuditLine(text: string): AuditRecord | 'malformed' | null {
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'malformed';
  }
  const parsed = auditRecordSchema.safeParse(value);
  return parsed.success ? { ...parsed.data, args: parsed.data.args } : 'malformed';
}

function readError(path: string, error: unknown): KiwiError {
  return new KiwiError('INTERNAL', `could not read the audit log at ${path}: ${describeError(error)}; check that it exists and is readable`, { cause: error });
}

/** One line for `kiwi audit tail`: time, session, ALLOW/DENY, tool, short args, duration, reason or error; a help signal as HELP, its action and message. */
export function formatAuditRecord(record: AuditRecord): string {
  if (record.help !== undefined) return formatHelpRecord(record);
  const parts = [
    clean(record.ts, 40),
    clean(record.session, 40),
    ...(record.client ? [clean(record.client, 40)] : []),
    record.decision === 'allow' ? 'ALLOW' : 'DENY ',
    clean(record.tool, 80),
    shortJson(record.args, 80),
    formatDuration(record.duration_ms),
  ];
  if (record.stuck) parts.push('STUCK');
  if (record.source) parts.push(`[${clean(record.source, 20)}]`);
  if (record.reused) parts.push(`reused prefetched ${clean(record.reused, 60)}`);
  if (record.resolved_by) parts.push(`resolved by ${clean(record.resolved_by.model, 60)} in ${formatDuration(record.resolved_by.ms)}`);
  if (record.checkpoint) parts.push(`checkpoint ${clean(record.checkpoint.slice(0, 12), 12)}`);
  if (record.approval) parts.push(`${record.approval.approved ? 'approved' : 'not approved'} by ${clean(record.approval.decided_by, 60)}`);
  if (record.cancelled) parts.push(`CANCELLED (${clean(record.cancelled, 120)})`);
  if (record.error) parts.push(`error ${clean(record.error.code, 40)}: ${clean(record.error.message, 200)}`);
  if (record.reason) parts.push(`— ${clean(record.reason, 200)}`);
  for (const note of record.notes ?? []) parts.push(`· ${clean(note, 160)}`);
  return parts.join('  ');
}

function formatHelpRecord(record: AuditRecord): string {
  const message = (record.args as { message?: unknown } | undefined)?.message;
  const parts = [clean(record.ts, 40), clean(record.session, 40), ...(record.client ? [clean(record.client, 40)] : []), 'HELP ', `${clean(record.help, 20)}:`, clean(typeof message === 'string' ? message : '', 200)];
  if (record.source) parts.push(`[${clean(record.source, 20)}]`);
  if (record.checkpoint) parts.push(`checkpoint ${clean(record.checkpoint.slice(0, 12), 12)}`);
  for (const note of record.notes ?? []) parts.push(`· ${clean(note, 160)}`);
  return parts.join('  ');
}

function shortJson(value: unknown, max: number): string {
  if (value === undefined) return '-';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return clean(text, max);
}

function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '?';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

/**
 * Audit lines carry text from agents and tools; control and bidi characters are escaped so a
 * line cannot move the cursor, recolour or reorder the terminal it is printed to.
 */
function clean(value: unknown, max: number): string {
  const text = String(value).replace(
    /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
