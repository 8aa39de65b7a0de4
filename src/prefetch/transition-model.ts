import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { replaceFile } from '../base/replace-file.js';
import { KiwiError, describeError } from '../base/errors.js';
import type { TransitionModel } from './types.js';

export type { TransitionModel };

export interface TransitionModelOptions {
  /** α in createTransitionModel's formula: how many observations of a previous tool weigh as much as the unigram prior. Default 2. */
  smoothing?: number;
  /** Distinct tools kept; past it the least-called tool is forgotten. Default 1000. */
  maxTools?: number;
  /** Distinct next tools kept per previous tool; past it the least-seen one is forgotten. Default 64. */
  maxSuccessors?: number;
}

export interface Transition {
  /** null: the first call of a session. */
  from: string | null;
  to: string;
  count: number;
  /** p(to | from) as `next` computes it. */
  p: number;
}

export interface LearnedTransitionModel extends TransitionModel {
  /** p(tool | previousTool); 0 for a tool the model does not know. */
  probability(previousTool: string | null, tool: string): number;
  /** The most frequent pairs, most frequent first. */
  topTransitions(limit: number): Transition[];
  stats(): { tools: number; pairs: number; observations: number };
  toJSON(): TransitionModelJson;
}

export const TRANSITION_MODEL_FORMAT = 'kiwi-transition-model';
export const TRANSITION_MODEL_VERSION = 1;
/** The audit writer caps tool ids at 256 characters; longer names cannot come from a real call. */
export const MAX_TOOL_NAME = 256;
const LIMITS = { smoothing: 1_000_000, maxTools: 100_000, maxSuccessors: 10_000 };
const MAX_FILE_BYTES = 64 * 1024 * 1024;
const RETRAIN = 're-run `kiwi predictor train` to rebuild it';

const toolName = z.string().min(1).max(MAX_TOOL_NAME);
const count = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const counts = z.array(z.tuple([toolName, count]));
const modelJsonSchema = z.strictObject({
  format: z.literal(TRANSITION_MODEL_FORMAT),
  version: z.literal(TRANSITION_MODEL_VERSION),
  smoothing: z.number().min(0).max(LIMITS.smoothing),
  maxTools: z.number().int().min(1).max(LIMITS.maxTools),
  maxSuccessors: z.number().int().min(1).max(LIMITS.maxSuccessors),
  tools: counts,
  start: counts,
  transitions: z.array(z.tuple([toolName, counts])),
});

/** The file format. Arrays of pairs rather than objects, so no tool name can be `__proto__` of anything. */
export type TransitionModelJson = z.infer<typeof modelJsonSchema>;

interface Row {
  total: number;
  next: Map<string, number>;
}

/**
 * "Which tool follows which" (DESIGN §5): counts of previous tool → next tool, learned from the
 * audit log and online from the calls the gateway sees. `null` stands for "no call yet" (the
 * first call of a session).
 *
 * Smoothing: interpolation with the unigram distribution (a Dirichlet prior centred on it):
 *
 *   p(t | prev) = (count(prev → t) + α · p(t)) / (count(prev → ·) + α),   p(t) = count(t) / N
 *
 * A previous tool seen a few times leans on how often each tool is called at all; one seen many
 * times speaks for itself; an unknown one gets p(t) exactly. Add-k smoothing was rejected: it
 * spreads mass evenly over every tool ever seen, so with hundreds of tools a rare previous tool
 * predicts near-uniform noise instead of the tools people actually call. Over the known tools
 * the probabilities sum to 1 for every `prev`.
 */
export function createTransitionModel(options: TransitionModelOptions = {}): LearnedTransitionModel {
  return buildModel(options);
}

function buildModel(options: TransitionModelOptions, saved?: TransitionModelJson): LearnedTransitionModel {
  const smoothing = checkNumber('smoothing', options.smoothing ?? 2, 0, LIMITS.smoothing, false);
  const maxTools = checkNumber('maxTools', options.maxTools ?? 1000, 1, LIMITS.maxTools, true);
  const maxSuccessors = checkNumber('maxSuccessors', options.maxSuccessors ?? 64, 1, LIMITS.maxSuccessors, true);

  // Per tool: how often it was called, and when last (to break ties when one must be forgotten).
  const unigram = new Map<string, { count: number; seen: number }>();
  let observations = 0;
  let tick = 0;
  const start: Row = { total: 0, next: new Map() };
  const rows = new Map<string, Row>();
  let byFrequency: string[] | undefined;

  const rowOf = (prev: string | null): Row | undefined => (prev === null ? start : rows.get(prev));
  const prior = (tool: string): number => (observations === 0 ? 0 : (unigram.get(tool)?.count ?? 0) / observations);

  function probability(prev: string | null, tool: string): number {
    const row = rowOf(prev);
    if (!row || row.total === 0) return prior(tool);
    return ((row.next.get(tool) ?? 0) + smoothing * prior(tool)) / (row.total + smoothing);
  }

  function forgetTool(keep: string | null): void {
    let victim: string | undefined;
    let worst = { count: Infinity, seen: Infinity };
    for (const [name, entry] of unigram) {
      if (name === keep) continue;
      if (entry.count < worst.count || (entry.count === worst.count && entry.seen < worst.seen)) {
        victim = name;
        worst = entry;
      }
    }
    if (victim === undefined) return;
    unigram.delete(victim);
    observations -= worst.count;
    rows.delete(victim);
    for (const row of [start, ...rows.values()]) removeSuccessor(row, victim);
  }

  function observe(prev: string | null, tool: string): void {
    checkTool(tool, 'tool');
    if (prev !== null) checkTool(prev, 'previousTool');
    byFrequency = undefined;
    tick += 1;
    const known = unigram.get(tool);
    if (known) {
      known.count += 1;
      known.seen = tick;
    } else {
      if (unigram.size >= maxTools) forgetTool(prev);
      unigram.set(tool, { count: 1, seen: tick });
    }
    observations += 1;
    // Rows exist only for known tools, so their number is bounded by maxTools.
    if (prev !== null && !unigram.has(prev)) return;
    let row = rowOf(prev);
    if (!row) {
      row = { total: 0, next: new Map() };
      rows.set(prev as string, row);
    }
    const seen = row.next.get(tool);
    if (seen === undefined && row.next.size >= maxSuccessors) removeSuccessor(row, leastSeen(row));
    row.next.set(tool, (seen ?? 0) + 1);
    row.total += 1;
  }

  function next(prev: string | null, k: number): { tool: string; p: number }[] {
    if (!Number.isInteger(k) || k < 0) throw new KiwiError('INVALID_INPUT', `next() needs a whole number of predictions k >= 0, got ${String(k)}`);
    if (k === 0 || observations === 0) return [];
    byFrequency ??= [...unigram.entries()].sort((a, b) => b[1].count - a[1].count || (a[0] < b[0] ? -1 : 1)).map(([name]) => name);
    // Outside prev's row the order is the unigram order, so its first k are the only other candidates.
    const candidates = new Set(byFrequency.slice(0, k));
    for (const tool of rowOf(prev)?.next.keys() ?? []) candidates.add(tool);
    return [...candidates]
      .map((tool) => ({ tool, p: probability(prev, tool) }))
      .filter((c) => c.p > 0)
      .sort((a, b) => b.p - a.p || (a.tool < b.tool ? -1 : 1))
      .slice(0, k);
  }

  function topTransitions(limit: number): Transition[] {
    const all: Transition[] = [];
    for (const [from, row] of [[null, start] as const, ...rows]) {
      for (const [to, n] of row.next) all.push({ from, to, count: n, p: probability(from, to) });
    }
    all.sort((a, b) => b.count - a.count || b.p - a.p || String(a.from).localeCompare(String(b.from)) || a.to.localeCompare(b.to));
    return all.slice(0, Math.max(0, limit));
  }

  function toJSON(): TransitionModelJson {
    const sorted = (entries: Iterable<[string, number]>): [string, number][] =>
      [...entries].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    return {
      format: TRANSITION_MODEL_FORMAT,
      version: TRANSITION_MODEL_VERSION,
      smoothing,
      maxTools,
      maxSuccessors,
      tools: sorted([...unigram].map(([name, e]) => [name, e.count])),
      start: sorted(start.next),
      transitions: [...rows]
        .filter(([, row]) => row.next.size > 0)
        .sort((a, b) => b[1].total - a[1].total || (a[0] < b[0] ? -1 : 1))
        .map(([prev, row]) => [prev, sorted(row.next)]),
    };
  }

  /** Counts as they were saved (already validated). */
  function load(json: TransitionModelJson): void {
    // Oldest first, so the most frequent tools count as the most recently seen.
    for (const [name, n] of [...json.tools].reverse()) {
      unigram.set(name, { count: n, seen: ++tick });
      observations += n;
    }
    const fill = (row: Row, entries: [string, number][]): void => {
      for (const [name, n] of entries) {
        row.next.set(name, n);
        row.total += n;
      }
    };
    fill(start, json.start);
    for (const [prev, entries] of json.transitions) {
      const row: Row = { total: 0, next: new Map() };
      fill(row, entries);
      rows.set(prev, row);
    }
  }

  if (saved) load(saved);
  return {
    next,
    observe,
    probability,
    topTransitions,
    stats: () => ({ tools: unigram.size, pairs: [start, ...rows.values()].reduce((sum, row) => sum + row.next.size, 0), observations }),
    toJSON,
  };
}

/**
 * A model from `toJSON()` output; throws INVALID_INPUT naming the first problem and saying to
 * retrain. `what` names the model in that message (e.g. its file).
 */
export function transitionModelFromJSON(value: unknown, what = 'the predictor model'): LearnedTransitionModel {
  const invalid = (reason: string): KiwiError => new KiwiError('INVALID_INPUT', `${what} is not valid (${reason}): ${RETRAIN}`);
  const version = (value as { version?: unknown } | null)?.version;
  if (typeof version === 'number' && version !== TRANSITION_MODEL_VERSION) {
    throw invalid(`it has format version ${version}, this Kiwi reads version ${TRANSITION_MODEL_VERSION}`);
  }
  const parsed = modelJsonSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(`${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
  }
  const json = parsed.data;
  const tools = new Set<string>();
  for (const [name] of json.tools) {
    if (tools.has(name)) throw invalid(`tool ${JSON.stringify(name)} is listed twice`);
    tools.add(name);
  }
  if (tools.size > json.maxTools) throw invalid(`it lists ${tools.size} tools, more than its maxTools ${json.maxTools}`);
  const checkRow = (where: string, entries: [string, number][]): void => {
    if (entries.length > json.maxSuccessors) throw invalid(`${where} has ${entries.length} next tools, more than maxSuccessors ${json.maxSuccessors}`);
    const seen = new Set<string>();
    for (const [name] of entries) {
      if (!tools.has(name)) throw invalid(`${where} names tool ${JSON.stringify(name)}, which is not in tools`);
      if (seen.has(name)) throw invalid(`${where} lists ${JSON.stringify(name)} twice`);
      seen.add(name);
    }
  };
  checkRow('start', json.start);
  const prevs = new Set<string>();
  for (const [prev, entries] of json.transitions) {
    const where = `transitions from ${JSON.stringify(prev)}`;
    if (!tools.has(prev)) throw invalid(`${where}: the tool is not in tools`);
    if (prevs.has(prev)) throw invalid(`${where} appear twice`);
    prevs.add(prev);
    checkRow(where, entries);
  }
  return buildModel({ smoothing: json.smoothing, maxTools: json.maxTools, maxSuccessors: json.maxSuccessors }, json);
}

/** Writes the model as JSON: temp file + rename, so readers see the old model or the new one, never half. */
export async function saveTransitionModel(file: string, model: LearnedTransitionModel, options: { signal?: AbortSignal } = {}): Promise<void> {
  throwIfAborted(options.signal, 'saving the predictor model');
  try {
    await replaceFile(file, `${JSON.stringify(model.toJSON())}\n`);
  } catch (error) {
    throw new KiwiError('INTERNAL', `could not write the predictor model ${file}: ${describeError(error)}; check that the folder is writable`, { cause: error });
  }
}

/** The model saved at `file`; undefined when there is none. A broken file throws INVALID_INPUT saying to retrain. */
export async function loadTransitionModel(file: string, options: { signal?: AbortSignal } = {}): Promise<LearnedTransitionModel | undefined> {
  throwIfAborted(options.signal, 'loading the predictor model');
  let text: string;
  try {
    const tooLarge = (size: number) => new KiwiError('INVALID_INPUT', `the predictor model ${file} is ${size} bytes, over the ${MAX_FILE_BYTES}-byte limit: ${RETRAIN}`);
    text = (await readCappedFile(file, MAX_FILE_BYTES, tooLarge, options.signal)).toString('utf8');
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ENOENT') return undefined;
    if (error instanceof KiwiError) throw error;
    throw new KiwiError('INTERNAL', `could not read the predictor model ${file}: ${describeError(error)}; check that it is readable`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `the predictor model ${file} is not valid JSON (${describeError(error)}): ${RETRAIN}`, { cause: error });
  }
  return transitionModelFromJSON(json, `the predictor model ${file}`);
}

function removeSuccessor(row: Row, tool: string | undefined): void {
  if (tool === undefined) return;
  const n = row.next.get(tool);
  if (n === undefined) return;
  row.next.delete(tool);
  row.total -= n;
}

/** The successor with the smallest count; the earliest inserted wins ties (Map order). */
function leastSeen(row: Row): string | undefined {
  let victim: string | undefined;
  let least = Infinity;
  for (const [name, n] of row.next) {
    if (n < least) {
      victim = name;
      least = n;
    }
  }
  return victim;
}

function checkTool(value: unknown, what: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TOOL_NAME) {
    throw new KiwiError('INVALID_INPUT', `observe() needs ${what} as a tool id of 1 to ${MAX_TOOL_NAME} characters, got ${JSON.stringify(String(value)).slice(0, 80)}`);
  }
}

function checkNumber(name: string, value: number, min: number, max: number, integer: boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new KiwiError('INVALID_INPUT', `transition model option ${name} is ${String(value)}: use ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
  }
  return value;
}
