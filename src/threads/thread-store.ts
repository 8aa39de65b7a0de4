import { KiwiError } from '../base/errors.js';
import type { HelpAction } from '../proxy/help-signal.js';
import type { UsageSummary } from '../budgets/usage-summary.js';

/**
 * Where threads are kept, whichever the store: a thread's first line is the thread (directive,
 * inputs, model, who started it), then what happened in order (each turn's text, each call and
 * its result, each intent not run), and last its end. Every line is durable before `append`
 * resolves, so a crash loses nothing written before it; a thread without an end line is running
 * or was cut short. While a process writes a thread it holds it, so a thread is never resumed
 * while it still runs. Files under `.ai/threads/` by default (file-thread-store.ts), the tables
 * of the Postgres that replicas share with DATABASE_URL (sql-thread-store.ts).
 */

export interface ThreadHeader {
  type: 'thread';
  id: string;
  directive: string;
  /** The directive's version that ran (absent in transcripts written before it was recorded). */
  version?: string;
  /** The environment it started from (`.ai/environments/`): a resume goes on in it. */
  environment?: string;
  /** The failed thread this one runs again, on the version annealed from it. */
  retry_of?: string;
  inputs: Record<string, unknown>;
  model: string;
  client: string;
  /** The thread that spawned this one. */
  parent?: string;
  /** The pipeline run this thread is a stage of: a run's state is read back from its stages' headers. */
  pipeline?: PipelineRef;
  depth: number;
  started_at: string;
}

/** `inputs` are the pipeline's own: a resume renders the stages not yet run from them. */
export interface PipelineRef {
  run: string;
  name: string;
  stage: string;
  inputs: Record<string, unknown>;
}

export type ThreadRecord =
  | { type: 'turn'; turn: number; text: string }
  | { type: 'call'; call_id: string; tool: string; arguments: unknown }
  /** `is_error`: the tool ran and reported an error (its exit code, an HTTP error status). */
  | { type: 'result'; call_id: string; tool: string; status: 'ok' | 'denied' | 'error'; is_error?: boolean; code?: string; text: string }
  | { type: 'unresolved'; intent: string; reason: string }
  | { type: 'approval'; tool: string; step_id: string; reason: string }
  /** The thread goes on after an end (or after a crash), in the same transcript. */
  | { type: 'resume'; client: string; model: string; message?: string; at: string }
  /** The agent's help signal (`[TOOL: help stuck: …]`); `checkpoint` is the git checkpoint a checkpoint signal took. */
  | { type: 'help'; action: HelpAction; message: string; checkpoint?: string }
  /**
   * `code`: the error code of a run that broke; `failure`: why it failed (failure-class.ts), absent when it succeeded;
   * `usage`: what the run used (own + children), absent in transcripts written before it was kept.
   */
  | { type: 'end'; status: ThreadStatus; result: string; steps_taken: number; limit?: string; error?: string; code?: string; failure?: string; usage?: UsageSummary; ended_at: string };

/** `escalated`: the agent asked for a person (`help escalate`), and its message is the result. */
export type ThreadStatus = 'completed' | 'failed' | 'cancelled' | 'escalated';

export type ThreadLine = ThreadHeader | ThreadRecord;

export type ResumeRecord = Extract<ThreadRecord, { type: 'resume' }>;

/** A thread as `list` shows it: its header and its end, when its last line is one. */
export interface ThreadSummary {
  header: ThreadHeader;
  end?: Extract<ThreadRecord, { type: 'end' }>;
  /** Not ended, and a live process writes it (else it was cut short). */
  running: boolean;
}

export interface ThreadStore {
  /** Where the threads are, as people read it in messages. */
  readonly where: string;
  /** A new thread, its header written; CONFLICT if the id is taken. */
  create(header: ThreadHeader): Promise<ThreadWriter>;
  /**
   * Writes on after a thread's last line: `resume` first. Refused with CONFLICT while another
   * process (or this one) still writes the thread; NOT_FOUND when there is no such thread.
   */
  reopen(id: string, resume: ResumeRecord): Promise<ThreadWriter>;
  /** Every line of a thread, in order (one torn by a crash, or not a thread's line, left out); NOT_FOUND, PAYLOAD_TOO_LARGE past the read cap. */
  read(id: string): Promise<ThreadLine[]>;
  /**
   * Changes whenever a line is written to the thread, and costs far less than `read`: followers
   * look at it on every beat and read again only when it moved. NOT_FOUND when there is no such thread.
   */
  stamp(id: string): Promise<string>;
  /** A thread's first line only; NOT_FOUND when there is no such thread. */
  readHeader(id: string): Promise<ThreadHeader>;
  /** The most recently written first. */
  list(limit?: number): Promise<ThreadSummary[]>;
  /** A process (this one or another, alive) writes the thread now. */
  isRunning(id: string): Promise<boolean>;
}

export interface ThreadWriter {
  /** Resolves once the line is durable; lines go in the order given. Text past the caps is cut first. */
  append(record: ThreadRecord): Promise<void>;
  /** Lets go of the thread (another process may then resume it). Once; later calls do nothing. */
  close(): Promise<void>;
}

/** A transcript read back is capped; a thread's texts are cut when written, and a whole line is capped. */
export const MAX_THREAD_BYTES = 32 * 1024 * 1024;
export const MAX_TEXT_CHARS = 64 * 1024;
export const MAX_LINE_BYTES = 1024 * 1024;

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const isThreadId = (id: string): boolean => ID.test(id);

/** INVALID_INPUT unless `id` is a thread's id (a UUID): never a path. */
export function checkThreadId(id: string): void {
  if (!isThreadId(id)) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(id)} is not a thread id; \`kiwi threads list\` shows them`);
}

export function noSuchThread(id: string): KiwiError {
  return new KiwiError('NOT_FOUND', `no thread ${id}; \`kiwi threads list\` shows them`);
}

export function threadTooLarge(id: string, bytes: number, where: string): KiwiError {
  return new KiwiError('PAYLOAD_TOO_LARGE', `thread ${id} is ${bytes} bytes, more than the ${MAX_THREAD_BYTES} read back; read it in ${where} with other tools`);
}

/** Nothing more will be written to the thread: its last line is its end, or no live process holds it (cut short). */
export async function isThreadOver(store: ThreadStore, id: string, lines: readonly ThreadLine[]): Promise<boolean> {
  return lines.at(-1)?.type === 'end' || !(await store.isRunning(id));
}

/**
 * The line as it is written: texts past MAX_TEXT_CHARS cut, a call's arguments past MAX_TEXT_CHARS
 * of JSON replaced by a note (the call ran with them; the audit log has them), then
 * PAYLOAD_TOO_LARGE if it is still over MAX_LINE_BYTES (a thread's inputs can be).
 */
export function threadLineJson(line: ThreadLine): string {
  const json = JSON.stringify(line.type === 'thread' ? line : capped(line));
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_LINE_BYTES) {
    const what = line.type === 'thread' ? `thread ${line.id}'s inputs make its first line` : `a ${line.type} line of a thread is`;
    throw new KiwiError('PAYLOAD_TOO_LARGE', `${what} ${bytes} bytes, more than the ${MAX_LINE_BYTES} a thread's line may hold`);
  }
  return json;
}

function capped(record: ThreadRecord): ThreadRecord {
  const cut = (text: string): string => (text.length <= MAX_TEXT_CHARS ? text : `${text.slice(0, MAX_TEXT_CHARS)}… (${text.length - MAX_TEXT_CHARS} more characters)`);
  switch (record.type) {
    case 'turn':
    case 'result':
      return { ...record, text: cut(record.text) };
    case 'end':
      return { ...record, result: cut(record.result), ...(record.error === undefined ? {} : { error: cut(record.error) }) };
    case 'resume':
      return record.message === undefined ? record : { ...record, message: cut(record.message) };
    case 'unresolved':
      return { ...record, intent: cut(record.intent), reason: cut(record.reason) };
    case 'approval':
      return { ...record, reason: cut(record.reason) };
    case 'help':
      return { ...record, message: cut(record.message) };
    case 'call': {
      const size = JSON.stringify(record.arguments ?? null).length;
      return size <= MAX_TEXT_CHARS ? record : { ...record, arguments: `(arguments of ${size} characters, not kept: more than a thread's line holds)` };
    }
  }
}
