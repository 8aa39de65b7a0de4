/**
 * `annealing:` in the policy: when a directive's thread fails in one of these ways, a new version
 * is written from its transcript and the run is retried once with it (anneal/anneal-on-failure.ts).
 * A run that was denied, cut by a limit, cancelled or escalated is never annealed: its directive
 * did not fail, something outside it stopped it, and a rewrite must not learn its way around that.
 */
export const ANNEALABLE_FAILURES = ['tool_error', 'unresolved', 'stuck', 'error'] as const;

export type AnnealableFailure = (typeof ANNEALABLE_FAILURES)[number];

/** `error` (the gateway or the resolver broke) is left out unless named: a rewrite rarely mends it. */
export const DEFAULT_ANNEALED_FAILURES: readonly AnnealableFailure[] = ['tool_error', 'unresolved', 'stuck'];

export interface AnnealingRules {
  failures: readonly AnnealableFailure[];
}
