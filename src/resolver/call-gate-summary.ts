/**
 * What the gateway says at start about calls from plain words: which `target_precision`s the
 * learned confidence offers (each held on every shipped catalog left out of fitting), which one
 * applies, and what happens to plain words when the configured one is not offered.
 */
import type { ResolverGates } from './resolver.js';

export interface OfferedTargets {
  /** Targets with a gate, lowest first. */
  offered: ReadonlyArray<{ precision: number; threshold: number }>;
  /** The model carries its per-fold figures (`kiwi model show` prints them). */
  checkedPerFold: boolean;
}

/** `modelAsked`: the model a chat asks where the rules stop (its own, or resolver.yaml's); absent with `fallback: off`. */
export function describeCallGate(gates: ResolverGates, targets: OfferedTargets | null, modelAsked?: string): string {
  const below = modelAsked === undefined ? 'the agent gets the closest tools back and is asked to write the call exactly (tool {json}), which runs' : `a chat asks ${modelAsked} in a side request and runs the call it writes once checked; elsewhere the agent is asked to write the call exactly (tool {json})`;
  const asked = gates.targetPrecision;
  if (targets === null || !gates.calibrated) return 'plain words: no learned confidence (resolver.yaml `model:`), so every call the rules resolve from plain words runs unchecked';
  const list = targets.offered.length === 0 ? 'none' : targets.offered.map((g) => String(g.precision)).join(', ');
  const offered = `targets offered: ${list} (${targets.checkedPerFold ? 'each held on every shipped catalog left out of fitting; `kiwi model show` prints the folds' : 'this model has no fold figures: rebuild it with `kiwi model train`'})`;
  if (asked <= 0) return `plain words: target_precision 0 runs every call the rules resolve from plain words, unchecked; ${offered}`;
  if (gates.callGate === null) {
    return `plain words: target_precision ${asked} is not offered (${offered}), so no call from plain words runs on the rules' confidence alone: ${below}`;
  }
  const used = targets.offered.find((g) => g.threshold === gates.callGate && g.precision >= asked);
  const via = used && used.precision !== asked ? ` (the gate of ${used.precision}, the lowest offered target above it)` : '';
  return `plain words: a call from plain words runs at calibrated confidence ${(gates.callGate).toFixed(2)} and above, for target_precision ${asked}${via}; below it ${below}; ${offered}`;
}
