import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { KiwiError } from '../errors.js';
import type { HelpAction } from '../proxy/help-signal.js';
import { readCappedFile } from '../read-capped-file.js';
import { processAlive } from '../process-alive.js';

/**
 * Threads on disk: one JSONL file per thread under `.ai/threads/`, its first line the thread
 * (directive, inputs, model, who started it), then what happened in order (each turn's text,
 * each call and its result, each intent not run), and last its end. Every line is written and
 * synced as it happens, so a crash loses nothing written before it; a thread without an end
 * line is running or was cut short. While a process writes a thread it holds `<id>.lock` (its
 * pid and host), so a thread is never resumed while it still runs.
 */

export const THREADS_DIR = path.join('.ai', 'threads');

export interface ThreadHeader {
  type: 'thread';
  id: string;
  directive: string;
  /** The directive's version that ran (absent in transcripts written before it was recorded). */
  version?: string;
  inputs: Record<string, unknown>;
  model: string;
  client: string;
  /** The thread that spawned this one. */
  parent?: string;
  depth: number;
  started_at: string;
}

export type ThreadRecord =
  | { type: 'turn'; turn: number; text: string }
  | { type: 'call'; call_id: string; tool: string; arguments: unknown }
  /** `is_error`: the tool ran and reported an error (its exit code, an HTTP error status). */
  | { type: 'result'; call_id: string; tool: string; status: 'ok' | 'denied' | 'error'; is_error?: boolean; text: string }
  | { type: 'unresolved'; intent: string; reason: string }
  | { type: 'approval'; tool: string; step_id: string; reason: string }
  /** The thread goes on after an end (or after a crash), in the same file. */
  | { type: 'resume'; client: string; model: string; message?: string; at: string }
  /** The agent's help signal (`[TOOL: help stuck: …]`); `checkpoint` is the git checkpoint a checkpoint signal took. */
  | { type: 'help'; action: HelpAction; message: string; checkpoint?: string }
  /** `code`: the error code of a run that broke; `failure`: why it failed (failure-class.ts), absent when it succeeded. */
  | { type: 'end'; status: ThreadStatus; result: string; steps_taken: number; limit?: string; error?: string; code?: string; failure?: string; ended_at: string };

/** `escalated`: the agent asked for a person (`help escalate`), and its message is the result. */
export type ThreadStatus = 'completed' | 'failed' | 'cancelled' | 'escalated';

export type ThreadLine = ThreadHeader | ThreadRecord;

/** A thread as `list` shows it: its header and its end, when its last line is one. */
export interface ThreadSummary {
  header: ThreadHeader;
  end?: Extract<ThreadRecord, { type: 'end' }>;
  /** Not ended, and a live process writes it (else it was cut short). */
  running: boolean;
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A transcript read back is capped; a thread's lines are capped when written (text is cut). */
const MAX_FILE_BYTES = 32 * 1024 * 1024;
const MAX_TEXT_CHARS = 64 * 1024;

export interface ThreadWriter {
  append(record: ThreadRecord): void;
  close(): void;
}

/** INVALID_INPUT unless `id` is a thread's id (a UUID): never a path. */
export function checkThreadId(id: string): void {
  if (!ID.test(id)) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(id)} is not a thread id; \`kiwi threads list\` shows them`);
}

export function threadFile(root: string, id: string): string {
  checkThreadId(id);
  return path.join(root, THREADS_DIR, `${id}.jsonl`);
}

export function createThreadWriter(root: string, header: ThreadHeader): ThreadWriter {
  mkdirSync(path.join(root, THREADS_DIR), { recursive: true });
  const unlock = lockThread(root, header.id);
  try {
    const writer = openWriter(root, header.id, 'wx');
    writer.write(header);
    return { append: writer.append, close: () => writer.close(unlock) };
  } catch (error) {
    unlock();
    throw error;
  }
}

/**
 * Writes on after a thread's last line: the `resume` record first. Refused with CONFLICT while
 * another process (or this one) still writes the thread.
 */
export function reopenThreadWriter(root: string, id: string, resume: Extract<ThreadRecord, { type: 'resume' }>): ThreadWriter {
  const unlock = lockThread(root, id);
  try {
    const writer = openWriter(root, id, 'a');
    writer.write(resume);
    return { append: writer.append, close: () => writer.close(unlock) };
  } catch (error) {
    unlock();
    throw error;
  }
}

interface OpenWriter {
  write(line: ThreadLine): void;
  append(record: ThreadRecord): void;
  close(unlock: () => void): void;
}

function openWriter(root: string, id: string, flags: 'wx' | 'a'): OpenWriter {
  const fd = openSync(threadFile(root, id), flags, 0o600);
  let open = true;
  // A crash mid-write leaves a torn last line: the next line starts on a line of its own.
  if (flags === 'a' && !endsWithNewline(threadFile(root, id))) writeSync(fd, '\n');
  const write = (line: ThreadLine): void => {
    if (!open) return;
    writeSync(fd, `${JSON.stringify(line)}\n`);
    fsyncSync(fd);
  };
  return {
    write,
    append(record) {
      write(capped(record));
    },
    close(unlock: () => void) {
      if (!open) return;
      open = false;
      closeSync(fd);
      unlock();
    },
  };
}

function endsWithNewline(file: string): boolean {
  const size = statSync(file).size;
  if (size === 0) return true;
  const fd = openSync(file, 'r');
  try {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    closeSync(fd);
  }
}

/**
 * Takes `<id>.lock`: its holder's pid and host. A lock whose process is gone (a crash) is taken
 * over; one held by a live process is a CONFLICT naming it.
 */
function lockThread(root: string, id: string): () => void {
  const file = lockFile(root, id);
  // Written whole before it is linked into place: a lock is never seen half written.
  const draft = `${file}.${process.pid}.${randomUUID()}`;
  writeFileSync(draft, JSON.stringify({ pid: process.pid, host: hostname() }), { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(draft, file);
        return () => rmSync(file, { force: true });
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'EEXIST' || attempt > 0) throw error;
        const holder = lockHolder(file);
        if (holder !== undefined && isAlive(holder)) {
          throw new KiwiError('CONFLICT', `thread ${id} is still running (process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}); wait for it to end, or stop that process`);
        }
        rmSync(file, { force: true });
      }
    }
  } finally {
    rmSync(draft, { force: true });
  }
}

/** A process (this one or another, alive) writes the thread now. */
export function isThreadRunning(root: string, id: string): boolean {
  const holder = lockHolder(lockFile(root, id));
  return holder !== undefined && isAlive(holder);
}

/** Nothing more will be written to the thread: its last line is its end, or no live process holds it (cut short). */
export function isThreadOver(root: string, id: string, lines: readonly ThreadLine[]): boolean {
  return lines.at(-1)?.type === 'end' || !isThreadRunning(root, id);
}

function lockFile(root: string, id: string): string {
  return `${threadFile(root, id).slice(0, -'.jsonl'.length)}.lock`;
}

function lockHolder(file: string): { pid: number; host: string } | undefined {
  try {
    const held = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; host?: unknown };
    return typeof held.pid === 'number' && typeof held.host === 'string' ? { pid: held.pid, host: held.host } : undefined;
  } catch {
    return undefined; // gone, or not a lock this code wrote
  }
}

/** On another host nothing can be checked: its lock is taken as held. */
function isAlive(holder: { pid: number; host: string }): boolean {
  if (holder.host !== hostname()) return true;
  return holder.pid === process.pid || processAlive(holder.pid);
}

/** Every line of a thread, in order; a torn line (a crash mid-write) is left out. */
export async function readThread(root: string, id: string): Promise<ThreadLine[]> {
  let text: string;
  try {
    const tooLarge = (size: number): Error => new KiwiError('PAYLOAD_TOO_LARGE', `thread ${id} is ${size} bytes, more than the ${MAX_FILE_BYTES} read back; read its file with other tools`);
    text = (await readCappedFile(threadFile(root, id), MAX_FILE_BYTES, tooLarge)).toString('utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') throw new KiwiError('NOT_FOUND', `no thread ${id}; \`kiwi threads list\` shows them`);
    throw error;
  }
  const lines: ThreadLine[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      lines.push(JSON.parse(line) as ThreadLine);
    } catch {
      continue; // torn by a crash; a resumed thread writes on after it
    }
  }
  return lines;
}

/** Newest first. */
export async function listThreads(root: string, limit = 50): Promise<ThreadSummary[]> {
  const dir = path.join(root, THREADS_DIR);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.jsonl') && ID.test(n.slice(0, -6)));
  } catch {
    return [];
  }
  const newest = names
    .map((n) => ({ id: n.slice(0, -6), at: statSync(path.join(dir, n)).mtimeMs }))
    .sort((a, b) => b.at - a.at)
    .slice(0, limit);
  const out: ThreadSummary[] = [];
  for (const { id } of newest) {
    const { header, last } = await readEdges(threadFile(root, id));
    if (header?.type !== 'thread') continue;
    out.push(last?.type === 'end' ? { header, end: last, running: false } : { header, running: isThreadRunning(root, id) });
  }
  return out;
}

/** A line is at most this long (its text is capped when written), so the edges of a file hold its first and last lines. */
const EDGE_BYTES = 1024 * 1024;

/** A thread's first line, read from the start of its file; NOT_FOUND when there is no such thread. */
export async function readThreadHeader(root: string, id: string): Promise<ThreadHeader> {
  const { header } = await readEdges(threadFile(root, id));
  if (header?.type !== 'thread') throw new KiwiError('NOT_FOUND', `no thread ${id}; \`kiwi threads list\` shows them`);
  return header;
}

/** A thread's first and last lines, read from the ends of its file: `list` never reads a long transcript whole. */
async function readEdges(file: string): Promise<{ header?: ThreadLine; last?: ThreadLine }> {
  const handle = await open(file, 'r').catch(() => undefined);
  if (handle === undefined) return {};
  try {
    const { size } = await handle.stat();
    const read = async (at: number, length: number): Promise<string> => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, at);
      return buffer.subarray(0, bytesRead).toString('utf8');
    };
    const head = (await read(0, Math.min(size, EDGE_BYTES))).split('\n');
    const tail = size <= EDGE_BYTES ? head : (await read(size - EDGE_BYTES, EDGE_BYTES)).split('\n').slice(1); // its first piece may be a line cut in two
    const parse = (line: string | undefined): ThreadLine | undefined => {
      try {
        return line === undefined || line === '' ? undefined : (JSON.parse(line) as ThreadLine);
      } catch {
        return undefined; // torn by a crash
      }
    };
    const last = tail.filter((l) => l !== '').at(-1);
    return { header: parse(head[0]), last: parse(last) };
  } finally {
    await handle.close();
  }
}

function capped(record: ThreadRecord): ThreadRecord {
  const cut = (text: string): string => (text.length <= MAX_TEXT_CHARS ? text : `${text.slice(0, MAX_TEXT_CHARS)}… (${text.length - MAX_TEXT_CHARS} more characters)`);
  if (record.type === 'turn' || record.type === 'result') return { ...record, text: cut(record.text) };
  if (record.type === 'end') return { ...record, result: cut(record.result) };
  if (record.type === 'resume' && record.message !== undefined) return { ...record, message: cut(record.message) };
  return record;
}
