import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { KiwiError } from '../../src/base/errors.js';
import { createIntentScanner } from '../../src/intent/intent-scanner.js';

/**
 * Prefetch traces (bench/traces/README.md): JSONL, one agent conversation per line, with every
 * streamed chunk and when it came, and the `[TOOL: …]` intents its turns contain.
 *
 * {"id": "…", "source": "…", "catalog": "seal-tools", "group": "announced", "user": "the request",
 *  "turns": [{"chunks": [{"t": 0, "text": "Next"}, {"t": 21, "text": " I'll"}, …],
 *             "intents": [{"text": "check the status of …", "gold": {"name": "checkDatabaseStatus", "arguments": {…}}}]}]}
 */

/** Caps, so a bad file cannot exhaust memory: a real agent turn is far below each. */
export const TRACE_LIMITS = {
  lineChars: 4 * 1024 * 1024,
  turns: 64,
  chunksPerTurn: 20_000,
  chunkChars: 4096,
  intentsPerTurn: 64,
  /** One turn may stream for at most this long (ms). */
  turnMs: 600_000,
  traces: 100_000,
} as const;

const GoldCall = z.strictObject({
  name: z.string().min(1, 'must name the tool'),
  // FORMAT.md cases: each parameter maps to its acceptable values; null checks the name only.
  arguments: z.record(z.string(), z.array(z.unknown())).nullable(),
});

const Chunk = z.strictObject({
  t: z.number().finite().min(0, 'must be ms since the turn started (>= 0)').max(TRACE_LIMITS.turnMs, `must be at most ${TRACE_LIMITS.turnMs} ms`),
  text: z.string().min(1, 'must not be empty (leave an empty chunk out)').max(TRACE_LIMITS.chunkChars),
});

const TraceIntent = z.strictObject({
  text: z.string().min(1, 'must be the inside of the [TOOL: …] as the scanner reads it'),
  gold: GoldCall.nullable(),
});

const Turn = z.strictObject({
  chunks: z.array(Chunk).min(1, 'a turn streams at least one chunk').max(TRACE_LIMITS.chunksPerTurn),
  intents: z.array(TraceIntent).max(TRACE_LIMITS.intentsPerTurn),
});

/** Extra top-level fields are kept out of the way (builders record where a trace came from). */
export const TraceSchema = z.looseObject({
  id: z.string().min(1, 'must not be empty'),
  source: z.string(),
  catalog: z.string().min(1, 'must be "seal-tools", "demo" or the path of a FORMAT.md catalog'),
  group: z.string().min(1).default('all'),
  user: z.string(),
  turns: z.array(Turn).min(1, 'a trace has at least one turn').max(TRACE_LIMITS.turns),
});

export type Trace = z.output<typeof TraceSchema>;
export type TraceTurn = Trace['turns'][number];
export type TraceChunk = TraceTurn['chunks'][number];
export type TraceIntent = TraceTurn['intents'][number];
export type TraceGold = z.output<typeof GoldCall>;

/** The turn's full text: every chunk joined, intents included. */
export function turnText(turn: Pick<TraceTurn, 'chunks'>): string {
  return turn.chunks.map((c) => c.text).join('');
}

/**
 * Parses one line. `where` (file:line) starts every message; a bad line throws INVALID_INPUT
 * naming the field and what to write instead.
 */
export function parseTraceLine(line: string, where: string): Trace {
  if (line.length > TRACE_LIMITS.lineChars) {
    throw bad(where, `the line is ${line.length} characters, more than ${TRACE_LIMITS.lineChars}; split the conversation into several traces`);
  }
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    throw bad(where, `not JSON (${error instanceof Error ? error.message : String(error)}); write one JSON object per line`);
  }
  const parsed = TraceSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue && issue.path.length > 0 ? fieldPath(issue.path) : 'line';
    throw bad(where, `${field}: ${issue?.message ?? 'invalid'}`);
  }
  checkTrace(parsed.data, where);
  return parsed.data;
}

/**
 * What zod cannot say: chunk times never go back, and each turn's `intents` are exactly the
 * intents the gateway's scanner finds in the turn's text, in order.
 */
export function checkTrace(trace: Trace, where: string): void {
  trace.turns.forEach((turn, ti) => {
    for (let ci = 1; ci < turn.chunks.length; ci++) {
      const prev = (turn.chunks[ci - 1] as TraceChunk).t;
      const t = (turn.chunks[ci] as TraceChunk).t;
      if (t < prev) throw bad(where, `turns[${ti}].chunks[${ci}].t: ${t} is before the previous chunk's ${prev}; times count ms from the turn's start and never go back`);
    }
    const found = scanIntents(turnText(turn));
    if (found.invalid) throw bad(where, `turns[${ti}]: the text holds a broken intent (${found.invalid}); fix the [TOOL: …] in the chunks`);
    if (found.intents.length !== turn.intents.length) {
      throw bad(where, `turns[${ti}]: the chunks hold ${found.intents.length} [TOOL: …] intent(s) but \`intents\` lists ${turn.intents.length}; list one entry per intent, in order`);
    }
    found.intents.forEach((text, ii) => {
      const listed = (turn.intents[ii] as TraceIntent).text;
      if (listed !== text) throw bad(where, `turns[${ti}].intents[${ii}].text: ${JSON.stringify(listed)} is not the intent in the chunks, ${JSON.stringify(text)}`);
    });
  });
}

/** The intents of a whole text as the streaming scanner reads them. */
export function scanIntents(text: string): { intents: string[]; invalid: string | null } {
  const scanner = createIntentScanner();
  const intents: string[] = [];
  let invalid: string | null = null;
  for (const e of [...scanner.push(text), ...scanner.end()]) {
    if (e.type === 'intent') intents.push(e.text);
    else if (e.type === 'invalid') invalid ??= e.reason;
  }
  return { intents, invalid };
}

/** Reads a traces file line by line; the first bad line stops it with its file and line number. Ids must be unique. */
export async function readTraces(file: string, options: { limit?: number; signal?: AbortSignal } = {}): Promise<Trace[]> {
  const traces: Trace[] = [];
  const ids = new Map<string, number>();
  const stream = createReadStream(file, { encoding: 'utf8', ...(options.signal ? { signal: options.signal } : {}) });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const line of lines) {
      n++;
      if (!line.trim()) continue;
      const where = `${file}:${n}`;
      const trace = parseTraceLine(line, where);
      const first = ids.get(trace.id);
      if (first !== undefined) throw bad(where, `id: ${JSON.stringify(trace.id)} is already used on line ${first}; give every trace its own id`);
      ids.set(trace.id, n);
      traces.push(trace);
      if (traces.length > TRACE_LIMITS.traces) throw bad(where, `more than ${TRACE_LIMITS.traces} traces; split the file`);
      if (options.limit !== undefined && traces.length >= options.limit) break;
    }
  } catch (error) {
    if (error instanceof KiwiError) throw error;
    throw new KiwiError('INVALID_INPUT', `${file}: cannot be read (${error instanceof Error ? error.message : String(error)}); pass a traces file (JSONL)`, { cause: error });
  } finally {
    lines.close();
    stream.destroy();
  }
  return traces;
}

function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${String(p)}`)).join('');
}

function bad(where: string, message: string): KiwiError {
  return new KiwiError('INVALID_INPUT', `${where}: ${message}; see bench/traces/README.md`);
}
