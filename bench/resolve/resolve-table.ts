/** The table `npm run bench -- resolve` prints: one row per group of cases. */
import type { GroupMetrics } from './metrics.js';

const HEAD = `${'group'.padEnd(30)} cases  top1  rec@5 rec@10 rec@20   mrr   call   cover  execP  abst  falseR  p50ms  p95ms  p99ms`;

export const RESOLVE_LEGEND = [
  'cases: intents in the group, no-fit ones included (the results file keeps them apart: n with gold calls, n_no_fit without);',
  'top1, call: one-call cases; rec@k, mrr, cover: cases with gold calls; execP: every case; abst, falseR: no-fit cases ("-": none in the group).',
];

export function printResolveTable(groups: Record<string, GroupMetrics>, out: (line: string) => void = console.log): void {
  const f = (x: number | null) => (x === null ? '   -  ' : x.toFixed(3).padStart(6));
  out(HEAD);
  for (const [name, g] of Object.entries(groups)) {
    out(
      `${name.slice(0, 30).padEnd(30)} ${String(g.n + g.n_no_fit).padStart(5)} ${f(g.tool_top1)} ${f(g.recall_at_5)} ${f(g.recall_at_10)} ${f(g.recall_at_20)} ${f(g.mrr)} ${f(g.call_accuracy)} ${f(g.coverage)} ${f(g.executed_precision)} ${f(g.abstention_accuracy)} ${f(g.false_resolution_rate)} ${g.latency_ms.p50.toFixed(1).padStart(6)} ${g.latency_ms.p95.toFixed(1).padStart(6)} ${g.latency_ms.p99.toFixed(1).padStart(6)}`,
    );
  }
  for (const line of RESOLVE_LEGEND) out(line);
}
