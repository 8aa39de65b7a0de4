import { addUsage, EMPTY_USAGE, withChildren, type UsageSummary } from '../budgets/usage-summary.js';
import type { ThreadLine } from './thread-store.js';

/**
 * What a thread used over all its runs (a resumed thread has an end line for each), from its
 * transcript: its own turns and the threads it spawned and waited for (own + children).
 * Undefined when no end line says (it runs, was cut short, or was written before usage was kept).
 */
export function threadUsage(lines: readonly ThreadLine[]): UsageSummary | undefined {
  const runs = lines.flatMap((l) => (l.type === 'end' && l.usage !== undefined ? [l.usage] : []));
  if (runs.length === 0) return undefined;
  const own = runs.reduce((sum, u) => addUsage(sum, u.own ?? u), EMPTY_USAGE);
  const children = runs.reduce((sum, u) => addUsage(sum, u.children ?? EMPTY_USAGE), EMPTY_USAGE);
  return withChildren(own, children);
}
