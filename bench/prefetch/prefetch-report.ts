import type { PrefetchCounters } from '../../src/prefetch/types.js';
import { percentile, round } from '../stats.js';
import type { TraceReplay } from './replay-trace.js';

/** One trace replayed both ways, with what prefetch counted while it ran on. */
export interface PairedTrace {
  on: TraceReplay;
  off: TraceReplay;
  /** The counters' change over the trace's prefetch-on replay (and its cache clean-up). */
  counters: PrefetchCounters;
  /** Prefetch went first (runs alternate, so drift hits both sides). */
  onFirst: boolean;
}

export interface Difference {
  trace: string;
  intent: string;
  on: string;
  off: string;
}

export interface GroupMetrics {
  traces: number;
  intents: number;
  hits: number;
  hit_rate: number | null;
  /** Share of intents that prefetch helped at all: a reused search, a speculative result, or both. */
  /** Intents whose search was made ahead (exact text by default). */
  search_hit_rate: number | null;
  /** Share of intents answered by a speculative result. */
  speculative_result_rate: number | null;
  intent_to_result_ms: { on: { p50: number; p95: number }; off: { p50: number; p95: number } };
  turn_ms: { on: { p50: number }; off: { p50: number } };
  latency_reduction: number | null;
  wasted_prefetches: number;
  prefetches: number;
  speculative: { started: number; used: number; discarded: number };
  /** Intents whose answer (call, arguments, how it ended) was not the same with prefetch on and off. */
  answers_differed: number;
  /** Intents whose result text differed (informational: tools whose output changes on its own). */
  results_differed: number;
  /** Share of intents with a gold call whose called tool is the gold tool, per side. */
  gold_tool_accuracy: { on: number | null; off: number | null };
}

export const GOALS = { hitRate: { min: 0.6, aim: 0.8 }, latencyReduction: { min: 0.3, aim: 0.5 } } as const;

/** Keys of PrefetchCounters that are counts (everything but the ms sums), for per-trace deltas. */
export function counterDelta(after: PrefetchCounters, before: PrefetchCounters): PrefetchCounters {
  const out = { ...after };
  for (const key of Object.keys(after) as Array<keyof PrefetchCounters>) out[key] = after[key] - before[key];
  return out;
}

/** Intents whose answer (the call and how it ended; or `result`: the result text) was not the same with prefetch on and off. */
export function differences(pairs: readonly PairedTrace[], field: 'answer' | 'result' = 'answer'): Difference[] {
  const out: Difference[] = [];
  for (const { on, off } of pairs) {
    const n = Math.max(on.intents.length, off.intents.length);
    for (let i = 0; i < n; i++) {
      const a = on.intents[i];
      const b = off.intents[i];
      if (a?.[field] !== b?.[field]) out.push({ trace: on.id, intent: a?.text ?? b?.text ?? '', on: a?.[field] ?? '(missing)', off: b?.[field] ?? '(missing)' });
    }
  }
  return out;
}

export function groupMetrics(pairs: readonly PairedTrace[]): GroupMetrics {
  const onMs = pairs.flatMap((p) => p.on.intents.map((i) => i.latencyMs)).filter(Number.isFinite);
  const offMs = pairs.flatMap((p) => p.off.intents.map((i) => i.latencyMs)).filter(Number.isFinite);
  const sum = (pick: (c: PrefetchCounters) => number) => pairs.reduce((s, p) => s + pick(p.counters), 0);
  const intents = pairs.reduce((s, p) => s + p.on.intents.length, 0);
  const hits = sum((c) => c.hits);
  const onP50 = percentile(onMs, 50);
  const offP50 = percentile(offMs, 50);
  return {
    traces: pairs.length,
    intents,
    hits,
    // A hit is an intent that prefetched work served: its search made ahead, or a speculative result.
    hit_rate: share(pairs, (i) => i.prefetchedSearch || i.speculativeResult),
    search_hit_rate: intents > 0 ? round(hits / intents) : null,
    speculative_result_rate: share(pairs, (i) => i.speculativeResult),
    intent_to_result_ms: { on: { p50: round(onP50, 1), p95: round(percentile(onMs, 95), 1) }, off: { p50: round(offP50, 1), p95: round(percentile(offMs, 95), 1) } },
    turn_ms: { on: { p50: round(percentile(pairs.flatMap((p) => p.on.turnMs), 50), 1) }, off: { p50: round(percentile(pairs.flatMap((p) => p.off.turnMs), 50), 1) } },
    latency_reduction: offP50 > 0 ? round(1 - onP50 / offP50) : null,
    wasted_prefetches: sum((c) => c.wasted),
    prefetches: sum((c) => c.prefetches),
    speculative: { started: sum((c) => c.speculativeStarted), used: sum((c) => c.speculativeUsed), discarded: sum((c) => c.speculativeDiscarded) },
    answers_differed: differences(pairs).length,
    results_differed: differences(pairs, 'result').length,
    gold_tool_accuracy: { on: goldAccuracy(pairs.map((p) => p.on)), off: goldAccuracy(pairs.map((p) => p.off)) },
  };
}

function share(pairs: readonly PairedTrace[], pick: (i: TraceReplay['intents'][number]) => boolean): number | null {
  const all = pairs.flatMap((p) => p.on.intents);
  return all.length > 0 ? round(all.filter(pick).length / all.length) : null;
}

function goldAccuracy(replays: readonly TraceReplay[]): number | null {
  const scored = replays.flatMap((r) => r.intents.filter((i) => i.gold !== null));
  if (scored.length === 0) return null;
  // The gold may spell a name the catalog import respelt (`PDF&URLTool` -> `PDF_URLTool`).
  const right = scored.filter((i) => i.tool !== null && (i.tool === i.gold?.name || i.tool === i.gold?.name.replace(/[^A-Za-z0-9_.-]/g, '_'))).length;
  return round(right / scored.length);
}

/** Per group (`all` first, then each trace group in order of appearance). */
export function byGroup(pairs: readonly PairedTrace[]): Record<string, GroupMetrics> {
  const groups = new Map<string, PairedTrace[]>([['all', [...pairs]]]);
  for (const p of pairs) groups.set(p.on.group, [...(groups.get(p.on.group) ?? []), p]);
  return Object.fromEntries([...groups].map(([name, list]) => [name, groupMetrics(list)]));
}

export function goalLines(all: GroupMetrics): string[] {
  const line = (label: string, value: number | null, min: number, aim: number, show: (x: number) => string) => {
    const v = value ?? Number.NaN;
    const status = v >= aim ? 'met (aim met too)' : v >= min ? `met (aim ${show(aim)} NOT met)` : 'NOT met';
    return `goal ${label} >= ${show(min)} (aim ${show(aim)}): ${Number.isNaN(v) ? 'n/a' : show(v)} — ${status}`;
  };
  const pct = (x: number) => `${Math.round(x * 1000) / 10}%`;
  return [
    line('hit rate', all.hit_rate, GOALS.hitRate.min, GOALS.hitRate.aim, (x) => x.toFixed(2)),
    line('latency reduction (intent-to-result p50)', all.latency_reduction, GOALS.latencyReduction.min, GOALS.latencyReduction.aim, pct),
  ];
}

export function printTable(groups: Record<string, GroupMetrics>): void {
  const f = (x: number | null, d = 3) => (x === null ? '-' : x.toFixed(d));
  console.log('group            traces intents  hit_rate search  on_p50  on_p95  off_p50 off_p95  reduction  turn_on turn_off  wasted  spec used/disc  differed');
  for (const [name, g] of Object.entries(groups)) {
    const m = g.intent_to_result_ms;
    console.log(
      [
        name.slice(0, 16).padEnd(16),
        String(g.traces).padStart(6),
        String(g.intents).padStart(7),
        f(g.hit_rate).padStart(9),
        f(g.search_hit_rate, 2).padStart(6),
        m.on.p50.toFixed(1).padStart(7),
        m.on.p95.toFixed(1).padStart(7),
        m.off.p50.toFixed(1).padStart(8),
        m.off.p95.toFixed(1).padStart(7),
        f(g.latency_reduction).padStart(10),
        g.turn_ms.on.p50.toFixed(0).padStart(8),
        g.turn_ms.off.p50.toFixed(0).padStart(8),
        String(g.wasted_prefetches).padStart(7),
        `${g.speculative.used}/${g.speculative.discarded}`.padStart(15),
        String(g.answers_differed).padStart(9),
      ].join(' '),
    );
  }
}
