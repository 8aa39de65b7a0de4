import { createReadStream } from 'node:fs';
import path from 'node:path';
import { listAuditFiles, listDateFolders } from '../audit/audit-files.js';
import { auditRecordSchema } from '../audit/audit-reader.js';
import { KiwiError, describeError } from '../base/errors.js';
import { MAX_TOOL_NAME, createTransitionModel, type LearnedTransitionModel, type TransitionModelOptions } from './transition-model.js';

export interface TrainTransitionsOptions {
  /** The audit root, e.g. `<project>/.ai/logs/audit`. A missing folder trains on nothing (`files: 0`). */
  auditDir: string;
  model?: TransitionModelOptions;
  /** Lines longer than this are skipped. Default 1 MiB. */
  maxLineBytes?: number;
  signal?: AbortSignal;
  /** Called after each file and every 10 000 lines. */
  onProgress?: (progress: TrainProgress) => void;
}

export interface TrainProgress {
  filesDone: number;
  filesTotal: number;
  lines: number;
  calls: number;
}

export interface TrainReport {
  model: LearnedTransitionModel;
  /** Sessions with at least one call learned from. */
  sessions: number;
  /** Calls learned from. */
  calls: number;
  files: number;
  /** Lines that could not be used at all: not JSON, not an audit record, too long, or torn. */
  skipped: number;
  /** Of `skipped`: files whose last line had no newline (a crash mid-write, or a write in progress). */
  torn: number;
  /** Valid records that are not the agent's choice of a call that ran. */
  ignored: { denied: number; failed: number; speculative: number; other: number };
}

const LEARNED_SOURCES = new Set(['gateway', 'mcp', 'cli']);
/**
 * Records are appended when a call ends but stamped when it started, so calls that overlapped can
 * sit out of order in the file; a small window per session puts them back in start order.
 */
const REORDER_WINDOW = 256;
const PROGRESS_EVERY = 10_000;

type Line = { kind: 'line'; text: string } | { kind: 'oversized' } | { kind: 'torn' };
interface Pending {
  time: number;
  order: number;
  tool: string;
}

/**
 * Learns which tool follows which from every audit file under `auditDir`. Only allowed calls that
 * ran without error, made by an agent or a person (sources gateway, mcp, cli), count: denied calls
 * never happened, and prefetch calls are the predictor's own guesses, not the agent's choices.
 */
export async function trainTransitions(options: TrainTransitionsOptions): Promise<TrainReport> {
  const maxLineBytes = options.maxLineBytes ?? 1024 * 1024;
  if (!Number.isInteger(maxLineBytes) || maxLineBytes < 1) {
    throw new KiwiError('INVALID_INPUT', `maxLineBytes is ${String(maxLineBytes)}: use a positive integer`);
  }
  const { signal } = options;
  checkAborted(signal);
  const model = createTransitionModel(options.model);
  const report: TrainReport = { model, sessions: 0, calls: 0, files: 0, skipped: 0, torn: 0, ignored: { denied: 0, failed: 0, speculative: 0, other: 0 } };
  const sessions = await listSessions(path.resolve(options.auditDir));
  const filesTotal = [...sessions.values()].reduce((sum, files) => sum + files.length, 0);
  let lines = 0;
  const progress = (): void => options.onProgress?.({ filesDone: report.files, filesTotal, lines, calls: report.calls });

  for (const files of sessions.values()) {
    let previous: string | null = null;
    const window: Pending[] = [];
    let order = 0;
    const learn = (entry: Pending): void => {
      model.observe(previous, entry.tool);
      previous = entry.tool;
    };
    // A session that runs past midnight UTC continues in the next day's folder.
    for (const file of files) {
      for await (const line of readLines(file, maxLineBytes, signal)) {
        lines += 1;
        if (lines % PROGRESS_EVERY === 0) progress();
        const tool = line.kind === 'line' ? classify(line.text, report) : undefined;
        if (line.kind === 'torn') report.torn += 1;
        if (line.kind !== 'line') report.skipped += 1;
        if (tool === undefined) continue;
        insertSorted(window, { time: tool.time, order: order++, tool: tool.name });
        report.calls += 1;
        if (window.length > REORDER_WINDOW) learn(window.shift() as Pending);
      }
      report.files += 1;
      progress();
    }
    for (const entry of window) learn(entry);
    if (order > 0) report.sessions += 1;
  }
  return report;
}

/** The tool and start time of a record worth learning from; counts everything else in `report`. */
function classify(text: string, report: TrainReport): { name: string; time: number } | undefined {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    report.skipped += 1;
    return undefined;
  }
  const parsed = auditRecordSchema.safeParse(value);
  if (!parsed.success) {
    report.skipped += 1;
    return undefined;
  }
  const record = parsed.data;
  if (record.source === 'prefetch') report.ignored.speculative += 1;
  // Listing an MCP server's tools is audited as `<server>.*`, an agent's help signal as `help`: not calls anyone predicts.
  else if (record.help !== undefined || record.source === undefined || !LEARNED_SOURCES.has(record.source) || record.tool.endsWith('.*') || record.tool.length === 0 || record.tool.length > MAX_TOOL_NAME) report.ignored.other += 1;
  else if (record.decision !== 'allow') report.ignored.denied += 1;
  else if (record.error !== undefined) report.ignored.failed += 1;
  else return { name: record.tool, time: Date.parse(record.ts) };
  return undefined;
}

function insertSorted(window: Pending[], entry: Pending): void {
  let i = window.length;
  while (i > 0 && (window[i - 1] as Pending).time > entry.time) i -= 1;
  window.splice(i, 0, entry);
}

/** Session id → its files, oldest day first, each day's parts in order; sessions in the order they first appear. */
async function listSessions(dir: string): Promise<Map<string, string[]>> {
  const sessions = new Map<string, string[]>();
  for (const date of await listDateFolders(dir)) {
    const folder = path.join(dir, date);
    for (const { name, session } of await listAuditFiles(folder)) {
      const files = sessions.get(session) ?? [];
      files.push(path.join(folder, name));
      sessions.set(session, files);
    }
  }
  return sessions;
}

/** Lines of a file, streamed; memory is bounded by `maxLineBytes`. A last line without newline is `torn`. */
async function* readLines(file: string, maxLineBytes: number, signal?: AbortSignal): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let bytes = 0;
  let oversized = false;
  try {
    for await (const chunk of createReadStream(file, { highWaterMark: 64 * 1024 }) as AsyncIterable<Buffer>) {
      checkAborted(signal);
      let from = 0;
      for (;;) {
        const newline = chunk.indexOf(0x0a, from);
        const end = newline === -1 ? chunk.length : newline;
        if (!oversized && end > from) {
          if (bytes + end - from > maxLineBytes) {
            oversized = true;
            parts = [];
          } else parts.push(chunk.subarray(from, end));
          bytes += end - from;
        }
        if (newline === -1) break;
        yield oversized ? { kind: 'oversized' } : { kind: 'line', text: Buffer.concat(parts).toString('utf8') };
        parts = [];
        bytes = 0;
        oversized = false;
        from = newline + 1;
      }
    }
  } catch (error) {
    if (error instanceof KiwiError) throw error;
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ENOENT') return; // removed since it was listed
    throw new KiwiError('INTERNAL', `could not read the audit file ${file}: ${describeError(error)}; check that it is readable`, { cause: error });
  }
  if (bytes > 0) yield { kind: 'torn' };
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new KiwiError('TOOL_CANCELLED', 'training the predictor from the audit log was cancelled');
}
