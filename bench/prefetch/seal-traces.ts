import type { BenchCase } from '../../src/datasets/case-file.js';
import { seedOf, uniform } from '../scale/seeded.js';
import { announcement, firstPersonStep, planLine, silentLine, type Position } from './announce.js';
import { splitRequest, type SubRequest } from './seal-split.js';
import { createStreamClock, tokenize, type StreamTiming } from './token-timing.js';
import { scanIntents, type Trace } from './trace-format.js';

export type SealGroup = 'announced' | 'silent';

export interface SealTraceOptions {
  seed: number;
  /** How many cases become "announced" traces, and how many other cases "silent" ones. */
  announced: number;
  silent: number;
  /** Where the cases came from, for `source` (e.g. "seal-tools/test_out_domain.jsonl"). */
  source: string;
  timing?: StreamTiming;
}

export interface SealTraceReport {
  traces: Trace[];
  /** Multi-call cases looked at, and how many could be split one step per call. */
  multiCall: number;
  eligible: number;
  /** Why the others were left out, with counts. */
  dropped: Record<string, number>;
}

/**
 * Prefetch traces from Seal-Tools multi-call cases: one turn per gold call, each a short
 * reasoning line and then `[TOOL: <sub-request>]`; the first turn opens with a one-line plan.
 * The same seed gives the same file. Announced and silent traces use different cases, so no
 * intent is seen twice in a run (the resolver remembers query vectors).
 */
export function sealTraces(cases: readonly BenchCase[], options: SealTraceOptions): SealTraceReport {
  const dropped: Record<string, number> = {};
  const eligible: Array<{ c: BenchCase; steps: SubRequest[] }> = [];
  const multi = cases.filter((c) => c.calls.length > 1);
  for (const c of multi) {
    const split = splitRequest(c.intent, c.calls);
    if (!split.ok) {
      const why = split.reason.replace(/\d+/g, 'N').replace(/leaves out .*/, 'leaves out an argument value');
      dropped[why] = (dropped[why] ?? 0) + 1;
      continue;
    }
    // The scanner must read each step back exactly: a stray quote or bracket would change the intent.
    if (!split.steps.every((s) => scanIntents(intentMarkup(s.text)).intents[0] === s.text)) {
      dropped['a step does not scan as one intent'] = (dropped['a step does not scan as one intent'] ?? 0) + 1;
      continue;
    }
    eligible.push({ c, steps: split.steps });
  }
  const shuffled = shuffle(eligible, uniform(seedOf(options.seed, 0x5ea1)));
  const announced = shuffled.slice(0, options.announced);
  const silent = shuffled.slice(options.announced, options.announced + options.silent);
  // Interleaved, so that `--limit N` on a run still sees both groups.
  const order: Array<{ c: BenchCase; steps: SubRequest[]; group: SealGroup }> = [];
  const every = silent.length > 0 ? Math.max(1, Math.round(announced.length / silent.length)) : Infinity;
  let s = 0;
  for (const [i, a] of announced.entries()) {
    order.push({ ...a, group: 'announced' });
    if ((i + 1) % every === 0 && s < silent.length) order.push({ ...(silent[s++] as (typeof silent)[number]), group: 'silent' });
  }
  for (; s < silent.length; s++) order.push({ ...(silent[s] as (typeof silent)[number]), group: 'silent' });
  const traces = order.map(({ c, steps, group }) => sealTrace(c, steps, group, options));
  return { traces, multiCall: multi.length, eligible: eligible.length, dropped };
}

export function sealTrace(c: BenchCase, steps: readonly SubRequest[], group: SealGroup, options: Pick<SealTraceOptions, 'seed' | 'source' | 'timing'>): Trace {
  const id = `${c.id}-${group}`;
  const seed = seedOf(options.seed, hashString(id));
  const words = uniform(seed ^ 0x2545f491);
  const clock = createStreamClock(seed, options.timing);
  const phrases = steps.map((s) => firstPersonStep(s.action));
  const turns = steps.map((step, i) => {
    const position: Position = i === 0 ? 'first' : i === steps.length - 1 ? 'last' : 'middle';
    const said = group === 'announced' ? announcement(phrases[i] as string, position, words) : silentLine(position, words);
    const text = `${i === 0 ? `${planLine(phrases, group === 'silent')}\n` : ''}${said}\n${intentMarkup(step.text)}`;
    return { chunks: clock(tokenize(text)), intents: [{ text: step.text, gold: step.gold }] };
  });
  return { id, source: `${options.source}#${c.id}`, catalog: 'seal-tools', group, user: c.intent, turns };
}

export function intentMarkup(intent: string): string {
  return `[TOOL: ${intent}]`;
}

/** FNV-1a, for a per-trace seed that does not depend on the trace's position in the file. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
