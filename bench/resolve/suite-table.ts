/** The two tables `resolve-suite` prints: one row per dataset/split. */
import { ARGUMENT_KINDS, type ArgumentTypeReport } from './argument-types.js';
import type { GroupMetrics } from './metrics.js';

export interface SuiteRow {
  name: string;
  all: GroupMetrics;
  executedPrecisionSingleCall: number | null;
  /** Call accuracy with the gold tool handed to the filler (given-tool.ts). */
  callGivenTool: number | null;
  argumentTypes: ArgumentTypeReport;
}

const f = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toFixed(3));

export function printSuiteTable(rows: readonly SuiteRow[], out: (line: string) => void = console.log): void {
  const width = Math.max(16, ...rows.map((r) => r.name.length));
  const head = ['n', 'top-1', 'rec@10', 'rec@20', 'call', 'given', 'cover', 'execP', 'execP1', 'no-fit', 'p50 ms'];
  out(`${'dataset/split'.padEnd(width)} ${head.map((h, i) => h.padStart(i === 0 ? 5 : 6)).join(' ')}`);
  for (const r of rows) {
    const g = r.all;
    const cells = [f(g.tool_top1), f(g.recall_at_10), f(g.recall_at_20), f(g.call_accuracy), f(r.callGivenTool), f(g.coverage), f(g.executed_precision), f(r.executedPrecisionSingleCall), f(g.abstention_accuracy), g.latency_ms.p50.toFixed(1)];
    out(`${r.name.padEnd(width)} ${String(g.n).padStart(5)} ${cells.map((c) => c.padStart(6)).join(' ')}`);
  }
}

export function printArgumentTable(rows: readonly SuiteRow[], out: (line: string) => void = console.log): void {
  const width = Math.max(16, ...rows.map((r) => r.name.length));
  const kinds = [...ARGUMENT_KINDS, 'all'] as const;
  out(`${'dataset/split'.padEnd(width)} ${kinds.map((k) => k.padStart(12)).join(' ')}`);
  for (const r of rows) {
    const cells = kinds.map((k) => {
      const a = r.argumentTypes[k];
      return (a.accuracy === null ? '-' : `${a.accuracy.toFixed(2)} (${a.n})`).padStart(12);
    });
    out(`${r.name.padEnd(width)} ${cells.join(' ')}`);
  }
}

export const SUITE_LEGEND = [
  'n: cases with gold calls; top-1 and call: cases with one gold call; rec@k: share of gold tools in the first k candidates;',
  'given: call accuracy when the filler is handed the gold tool (one-call cases whose tool is in the catalog): what filling alone gets right;',
  'cover: fitting cases resolved to a call to run; execP: of the calls that ran, the share fully right, over every case',
  '(a call on a multi-call case counts as wrong; no-fit cases included); execP1: the same over one-call and no-fit cases;',
  'no-fit: the no-fit intents left unresolved; p50: per-intent resolution time.',
];

export const ARGUMENT_LEGEND = 'accuracy (gold parameters) of each kind, on resolved one-call cases whose tool is right';
