import { readdir } from 'node:fs/promises';
import { KiwiError, describeError } from '../base/errors.js';

/**
 * Audit files live at `<dir>/<YYYY-MM-DD>/<session>.jsonl`; once a file reaches its size cap the
 * session goes on in `<session>+1.jsonl`, `<session>+2.jsonl`, … The `+` cannot occur in a
 * session id, so `a.1` (a session) and `a+1` (part 1 of session `a`) never collide, and
 * `grep … <day>/<session>*.jsonl` still finds every part.
 */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

const FILE_NAME = /^([A-Za-z0-9_.-]{1,128}?)(?:\+([1-9][0-9]{0,8}))?\.jsonl$/;
const DATE_FOLDER = /^\d{4}-\d{2}-\d{2}$/;

export interface AuditFileName {
  name: string;
  session: string;
  /** 0 for `<session>.jsonl`, n for `<session>+n.jsonl`. */
  part: number;
}

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

export function isDateFolder(name: string): boolean {
  if (!DATE_FOLDER.test(name)) return false;
  const date = new Date(`${name}T00:00:00.000Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(name);
}

export function auditFileName(session: string, part: number): string {
  return part === 0 ? `${session}.jsonl` : `${session}+${part}.jsonl`;
}

/** The session and part a file name stands for, or undefined for anything that is not an audit file. */
export function parseAuditFileName(name: string): AuditFileName | undefined {
  const match = FILE_NAME.exec(name);
  if (!match) return undefined;
  return { name, session: match[1] as string, part: match[2] === undefined ? 0 : Number(match[2]) };
}

/** The audit files in one date folder, by session, then part: the order they were written in. */
export async function listAuditFiles(folder: string): Promise<AuditFileName[]> {
  const files: AuditFileName[] = [];
  for (const name of await listNames(folder)) {
    const parsed = parseAuditFileName(name);
    if (parsed) files.push(parsed);
  }
  return files.sort((a, b) => (a.session < b.session ? -1 : a.session > b.session ? 1 : a.part - b.part));
}

/** The date folders under the audit root, oldest first. */
export async function listDateFolders(dir: string): Promise<string[]> {
  return (await listNames(dir)).filter(isDateFolder).sort();
}

/** A folder's entries; a missing folder is empty. */
export async function listNames(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (isMissing(error)) return [];
    throw new KiwiError('INTERNAL', `could not list the audit folder ${dir}: ${describeError(error)}; check that it is a readable folder`, { cause: error });
  }
}

export function isMissing(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
