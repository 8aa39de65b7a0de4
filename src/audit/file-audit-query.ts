import { open, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describeError, KiwiError } from '../base/errors.js';
import { auditDateFolder, auditFileName, isDateFolder, isMissing, listAuditFiles, listDateFolders, SESSION_ID_PATTERN } from './audit-files.js';
import { checkAuditPageLimit, foreignAuditCursor, matchesAuditFilter, type AuditPage, type AuditPageRequest, type AuditQuery } from './audit-query.js';
import { parseAuditLine } from './audit-reader.js';
import type { AuditRecord } from './audit-record.js';
import { linesFromEnd } from './lines-from-end.js';

/**
 * The audit files of one gateway (`.ai/logs/audit/<day>/<session>[+part].jsonl`) searched a page
 * at a time, reading backwards from where the last page stopped. The order is the order the
 * files are read in: the newest day first; within a day, session by session, the most recently
 * started first (sessions are named `<source>-<start>-<random>`); within a session, its newest
 * part first, each newest line first. The cursor is that position (day, session, part, byte
 * offset), so a page never reads again what an earlier one read, and a page's work is capped in
 * bytes and files: one cut short says so, and its cursor goes on from where it stopped. Memory
 * holds a page's records and one line, whatever the files' size.
 */

export interface FileAuditQueryOptions {
  /** Bytes of audit lines one page reads at most. Default 16 MiB (one file's size cap). */
  maxScanBytes?: number;
  /** Audit files one page opens at most. Default 256. */
  maxScanFiles?: number;
}

/** Where a scan stands: the part of `session` on `day` it reads, and the bytes of it before `offset` still to read. */
interface Position {
  day: string;
  session: string;
  part: number;
  offset: number;
}

/** Longer lines are not records our writer makes (audit-log.ts caps them at 64 KiB): skipped unread. */
const MAX_LINE_BYTES = 1024 * 1024;
const STARTED = /-(\d{8}T\d{6})-[0-9a-f]+$/;

export function fileAuditQuery(dir: string, options: FileAuditQueryOptions = {}): AuditQuery {
  const root = resolve(dir);
  const maxScanBytes = options.maxScanBytes ?? 16 * 1024 * 1024;
  const maxScanFiles = options.maxScanFiles ?? 256;
  return {
    async page(request) {
      const limit = checkAuditPageLimit(request.limit);
      const from = request.cursor === undefined ? undefined : parseCursor(request.cursor, root);
      const found: { record: AuditRecord; at: Position }[] = [];
      const scanned = { bytes: 0, files: 0 };
      let at: Position | undefined;
      const page = (nextCursor: string, capped: boolean): AuditPage => ({ records: found.map((f) => f.record), nextCursor, scanCapped: capped && found.length < limit });

      for (const day of await daysToRead(root, request, from)) {
        for (const { session, parts } of await sessionsOf(join(root, day))) {
          if (from !== undefined && day === from.day && compareSessions(session, from.session) > 0) continue;
          for (const part of parts) {
            const resuming = from !== undefined && day === from.day && session === from.session;
            // Parts newer than the cursor's were read before it; the cursor's own, read to its start, is done.
            if (resuming && (part > from.part || (part === from.part && from.offset === 0))) continue;
            if (scanned.files >= maxScanFiles && at !== undefined) return page(cursorOf(at), true);
            scanned.files += 1;
            const file = join(root, day, auditFileName(session, part));
            const handle = await open(file, 'r').catch((error: unknown) => {
              if (isMissing(error)) return undefined; // pruned since it was listed
              throw readError(file, error);
            });
            if (handle === undefined) continue;
            at = { day, session, part, offset: 0 };
            try {
              const { size } = await handle.stat();
              at.offset = resuming && part === from.part ? Math.min(from.offset, size) : size;
              for await (const line of readBackwards(handle, file, at.offset, request.signal)) {
                scanned.bytes += at.offset - line.start;
                at.offset = line.start;
                const record = line.kind === 'line' ? parseAuditLine(line.text) : null;
                if (record !== null && record !== 'malformed' && matchesAuditFilter(record, request)) {
                  // One more than the page holds: there is a next page, after the page's last record.
                  if (found.length === limit) return page(cursorOf((found.at(-1) as { at: Position }).at), false);
                  found.push({ record, at: { ...at } });
                }
                if (scanned.bytes >= maxScanBytes) return page(cursorOf(at), true);
              }
              at.offset = 0;
            } finally {
              await handle.close();
            }
          }
        }
      }
      return page('', false);
    },
  };
}

/** The date folders a page may find records in, newest first: none after the cursor's, none outside since/until. */
async function daysToRead(root: string, request: AuditPageRequest, from: Position | undefined): Promise<string[]> {
  const first = request.since === undefined ? undefined : auditDateFolder(request.since);
  // `until` is the first moment left out.
  const last = request.until === undefined ? undefined : auditDateFolder(new Date(request.until.getTime() - 1));
  return (await listDateFolders(root))
    .filter((day) => (first === undefined || day >= first) && (last === undefined || day <= last) && (from === undefined || day <= from.day))
    .reverse();
}

/** A day's sessions in the order they are read, each with its parts, newest first. */
async function sessionsOf(folder: string): Promise<{ session: string; parts: number[] }[]> {
  const sessions = new Map<string, number[]>();
  for (const file of await listAuditFiles(folder)) sessions.set(file.session, [...(sessions.get(file.session) ?? []), file.part]);
  return [...sessions]
    .map(([session, parts]) => ({ session, parts: parts.sort((a, b) => b - a) }))
    .sort((a, b) => compareSessions(b.session, a.session));
}

/** Positive when session `a` is read before `b`: the later start (from its name), then the greater name; a name without a start after every named one. */
function compareSessions(a: string, b: string): number {
  const startA = STARTED.exec(a)?.[1] ?? '';
  const startB = STARTED.exec(b)?.[1] ?? '';
  if (startA !== startB) return startA < startB ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

async function* readBackwards(handle: FileHandle, file: string, size: number, signal: AbortSignal | undefined): ReturnType<typeof linesFromEnd> {
  try {
    yield* linesFromEnd(handle, size, MAX_LINE_BYTES, signal);
  } catch (error) {
    throw error instanceof KiwiError ? error : readError(file, error);
  }
}

function cursorOf(at: Position): string {
  return `${at.day}/${at.session}/${at.part}/${at.offset}`;
}

function parseCursor(cursor: string, root: string): Position {
  const [day, session, part, offset, ...rest] = cursor.split('/');
  if (day === undefined || session === undefined || part === undefined || offset === undefined || rest.length > 0) throw foreignAuditCursor(root);
  if (!isDateFolder(day) || !SESSION_ID_PATTERN.test(session) || !/^\d{1,9}$/.test(part) || !/^\d{1,15}$/.test(offset)) throw foreignAuditCursor(root);
  return { day, session, part: Number(part), offset: Number(offset) };
}

function readError(file: string, error: unknown): KiwiError {
  return new KiwiError('INTERNAL', `could not read the audit log at ${file}: ${describeError(error)}; check that it exists and is readable`, { cause: error });
}
