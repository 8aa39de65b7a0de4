import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { KiwiError } from '../errors.js';
import type { HelpAction } from '../proxy/help-signal.js';
import { readCappedFile } from '../read-capped-file.js';

/**
 * Threads on disk: one JSONL file per thread under `.ai/threads/`, its first line the thread
 * (directive, inputs, model, who started it), then what happened in order (each turn's text,
 * each call and its result, each intent not run), and last its end. Every line is written and
 * synced as it happens, so a crash loses nothing written before it; a thread without an end
 * line was cut short.
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
  /** The agent's help signal (`[TOOL: help stuck: …]`); `checkpoint` is the git checkpoint a checkpoint signal took. */
  | { type: 'help'; action: HelpAction; message: string; checkpoint?: string }
  /** `code`: the error code of a run that broke; `failure`: why it failed (failure-class.ts), absent when it succeeded. */
  | { type: 'end'; status: ThreadStatus; result: string; steps_taken: number; limit?: string; error?: string; code?: string; failure?: string; ended_at: string };

/** `escalated`: the agent asked for a person (`help escalate`), and its message is the result. */
export type ThreadStatus = 'completed' | 'failed' | 'cancelled' | 'escalated';

export type ThreadLine = ThreadHeader | ThreadRecord;

/** A thread as `list` shows it: its header and its end, when it has one. */
export interface ThreadSummary {
  header: ThreadHeader;
  end?: Extract<ThreadRecord, { type: 'end' }>;
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A transcript read back is capped; a thread's lines are capped when written (text is cut). */
const MAX_FILE_BYTES = 32 * 1024 * 1024;
const MAX_TEXT_CHARS = 64 * 1024;

export interface ThreadWriter {
  append(record: ThreadRecord): void;
  close(): void;
}

export function threadFile(root: string, id: string): string {
  if (!ID.test(id)) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(id)} is not a thread id; \`kiwi threads list\` shows them`);
  return path.join(root, THREADS_DIR, `${id}.jsonl`);
}

export function createThreadWriter(root: string, header: ThreadHeader): ThreadWriter {
  mkdirSync(path.join(root, THREADS_DIR), { recursive: true });
  const fd = openSync(threadFile(root, header.id), 'wx', 0o600);
  let open = true;
  const write = (line: ThreadLine): void => {
    if (!open) return;
    writeSync(fd, `${JSON.stringify(line)}\n`);
    fsyncSync(fd);
  };
  write(header);
  return {
    append(record) {
      write(capped(record));
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}

/** Every line of a thread, in order; a torn last line (a crash mid-write) is left out. */
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
      break;
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
    const lines = await readThread(root, id);
    const header = lines[0];
    if (header?.type !== 'thread') continue;
    const last = lines.at(-1);
    out.push({ header, ...(last?.type === 'end' ? { end: last } : {}) });
  }
  return out;
}

function capped(record: ThreadRecord): ThreadRecord {
  const cut = (text: string): string => (text.length <= MAX_TEXT_CHARS ? text : `${text.slice(0, MAX_TEXT_CHARS)}… (${text.length - MAX_TEXT_CHARS} more characters)`);
  if (record.type === 'turn' || record.type === 'result') return { ...record, text: cut(record.text) };
  if (record.type === 'end') return { ...record, result: cut(record.result) };
  return record;
}
