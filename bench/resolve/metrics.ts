import { callMatches } from '../../src/resolver/score-call.js';
import type { Resolution } from '../../src/resolver/types.js';
import { percentile, round } from '../stats.js';
import type { BenchCase } from '../../src/datasets/case-file.js';

export interface CaseResult {
  case: BenchCase;
  resolution: Resolution;
  ms: number;
}

export interface GroupMetrics {
  n: number;
  n_single_call: number;
  tool_top1: number | null;
  recall_at_5: number | null;
  recall_at_10: number | null;
  /** The gold tool among the first 20 candidates: the recall of a 20-tool menu. */
  recall_at_20: number | null;
  mrr: number | null;
  call_accuracy: number | null;
  /** Share of fitting intents resolved to a call to run (FORMAT.md). */
  coverage: number | null;
  /** Of the calls that would run, over every case (no-fit included), the share fully right (FORMAT.md). */
  executed_precision: number | null;
  n_no_fit: number;
  abstention_accuracy: number | null;
  false_resolution_rate: number | null;
  latency_ms: { p50: number; p95: number; p99: number };
}

/**
 * FORMAT.md's scores. tool top-1 is the first candidate's name on single-call cases, whether or
 * not the resolver was confident enough to answer; call accuracy counts only answered calls.
 */
export function groupMetrics(results: CaseResult[], schemas: Schemas): GroupMetrics {
  const relevant = results.filter((r) => r.case.calls.length > 0);
  const single = relevant.filter((r) => r.case.calls.length === 1);
  const noFit = results.filter((r) => r.case.calls.length === 0);
  const ids = (r: CaseResult) => r.resolution.candidates.map((c) => c.tool);
  const recallAt = (k: number) => mean(relevant.map((r) => share(r.case.calls.map((c) => c.name), ids(r).slice(0, k))));
  const abstained = noFit.filter((r) => r.resolution.status === 'unresolved').length;
  return {
    n: relevant.length,
    n_single_call: single.length,
    tool_top1: mean(single.map((r) => (ids(r)[0] === r.case.calls[0]?.name ? 1 : 0))),
    recall_at_5: recallAt(5),
    recall_at_10: recallAt(10),
    recall_at_20: recallAt(20),
    mrr: mean(relevant.map((r) => mean(r.case.calls.map((c) => reciprocalRank(ids(r), c.name))) ?? 0)),
    call_accuracy: mean(single.map((r) => (isCorrectCall(r, schemas) ? 1 : 0))),
    coverage: mean(relevant.map((r) => (r.resolution.status === 'resolved' ? 1 : 0))),
    executed_precision: mean(results.filter((r) => r.resolution.status === 'resolved').map((r) => (executedRight(r, schemas) ? 1 : 0))),
    n_no_fit: noFit.length,
    abstention_accuracy: noFit.length ? round(abstained / noFit.length) : null,
    false_resolution_rate: noFit.length ? round(1 - abstained / noFit.length) : null,
    latency_ms: latency(results.map((r) => r.ms)),
  };
}

/** Parameter names of each tool by catalog name, for FORMAT.md's "no parameter outside the schema". */
export type Schemas = ReadonlyMap<string, string[]>;

/**
 * Whether the call a case resolved to is fully right. One call can be right only for a case with
 * one gold call: on a no-fit case any call is wrong, and on a multi-call case one call does only
 * part of what was asked.
 */
export function executedRight(r: CaseResult, schemas: Schemas): boolean {
  return r.case.calls.length === 1 && isCorrectCall(r, schemas);
}

function isCorrectCall(r: CaseResult, schemas: Schemas): boolean {
  const gold = r.case.calls[0];
  if (!gold || r.resolution.status !== 'resolved') return false;
  const call = r.resolution.call;
  if (gold.arguments === null) return call.tool === gold.name;
  const schema = schemas.get(call.tool);
  return callMatches({ name: gold.name, arguments: gold.arguments }, { tool: call.tool, arguments: call.arguments }, schema ? { schema } : undefined);
}

/** `all`, `gold_calls=single|multi|none`, and one group per value of each extra string field of the cases (e.g. `category=…`). */
export function groupResults(results: CaseResult[], schemas: Schemas): Record<string, GroupMetrics> {
  const groups = new Map<string, CaseResult[]>([['all', results]]);
  for (const r of results) {
    const shape = r.case.calls.length === 0 ? 'none' : r.case.calls.length === 1 ? 'single' : 'multi';
    groups.set(`gold_calls=${shape}`, [...(groups.get(`gold_calls=${shape}`) ?? []), r]);
    for (const [key, value] of Object.entries(r.case.groups)) {
      const name = `${key}=${value}`;
      groups.set(name, [...(groups.get(name) ?? []), r]);
    }
  }
  return Object.fromEntries([...groups].map(([name, rs]) => [name, groupMetrics(rs, schemas)]));
}

export function latency(sample: number[]): { p50: number; p95: number; p99: number } {
  return { p50: round(percentile(sample, 50), 2), p95: round(percentile(sample, 95), 2), p99: round(percentile(sample, 99), 2) };
}

function share(gold: string[], found: string[]): number {
  return gold.filter((g) => found.includes(g)).length / gold.length;
}

function reciprocalRank(ranked: string[], id: string): number {
  const i = ranked.indexOf(id);
  return i < 0 ? 0 : 1 / (i + 1);
}

export function mean(xs: number[]): number | null {
  return xs.length ? round(xs.reduce((a, b) => a + b, 0) / xs.length) : null;
}
