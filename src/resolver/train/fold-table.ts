/**
 * The fold table, as `kiwi model show` and `resolve-suite` print it: one row per target, one
 * column per dataset left out, each cell what the gate fitted without that dataset did on it.
 */
import { holds, type FoldCounts } from './fold-gates.js';

export interface FoldCell extends FoldCounts {
  /** The gate fitted without this dataset; null: none held there, so nothing ran. */
  threshold: number | null;
}

export interface FoldTableRow {
  precision: number;
  /** The gate fitted on every dataset (the one shipped where offered); null: none held. */
  gate: number | null;
  /** Per dataset left out, in the order of `folds`. */
  cells: FoldCell[];
}

const f3 = (x: number): string => x.toFixed(3);

/** `execP/cover n`: executed precision, coverage, executed calls; `!` where the cell does not show the target. */
export function foldCell(c: FoldCell, precision: number, minExecuted: number): string {
  if (c.threshold === null) return 'no gate !';
  const precisionText = c.executed > 0 ? f3(c.right / c.executed) : '-';
  const coverage = c.fitting > 0 ? f3(c.covered / c.fitting) : '-';
  return `${precisionText}/${coverage} ${c.executed}${holds(c, precision, minExecuted) ? '' : ' !'}`;
}

/** `verdict` names the last column: whether every dataset left out showed the target. */
export function foldTableLines(folds: readonly string[], rows: readonly FoldTableRow[], minExecuted: number, verdict = 'offered'): string[] {
  const width = Math.max(19, ...folds.map((d) => d.length + 1));
  const lines = [`${'target'.padEnd(7)} ${'gate'.padStart(6)} ${folds.map((d) => d.padStart(width)).join(' ')}  ${verdict}`];
  for (const r of rows) {
    const cells = r.cells.map((c) => foldCell(c, r.precision, minExecuted).padStart(width));
    const offered = r.gate !== null && r.cells.every((c) => c.threshold !== null && holds(c, r.precision, minExecuted));
    lines.push(`${String(r.precision).padEnd(7)} ${(r.gate === null ? 'none' : f3(r.gate)).padStart(6)} ${cells.join(' ')}  ${offered ? 'yes' : 'no'}`);
  }
  lines.push(`cell: executed precision / coverage, then the calls that ran, with the gate fitted without that dataset; ! = it does not show the target (below it, or under ${minExecuted} calls)`);
  return lines;
}
