/** Hooks as directives and the policy declare them (registry/ and policy/ parse them; hook-runner.ts runs them). */

/** What a steering hook decides for the call that fired it (hooks-and-approvals.md, "Steering"). */
export const STEER_DECISIONS = ['retry', 'skip', 'fail', 'abort', 'continue'] as const;
export type SteerDecision = (typeof STEER_DECISIONS)[number];

/** The most a hook may have a call run again: a hook must not be able to run a tool without bound. */
export const MAX_RETRIES = 10;
/** How long a call waits for a steering directive's thread unless its hook says otherwise. */
export const DEFAULT_STEER_TIMEOUT_MS = 60_000;

/** What a hook does when its condition holds. */
export type HookAction =
  /** `steer`: the call waits for the directive's thread, whose answer decides it, for at most `timeoutMs`; `retries` bounds a `retry` answer. */
  | { kind: 'directive'; name: string; inputs: Record<string, string>; steer?: { timeoutMs: number; retries: number } }
  | { kind: 'deny'; reason: string }
  | { kind: 'require_approval' }
  | { kind: 'annotate'; text: string }
  /** POSTs the event as JSON to `url` (written by the policy's author, so trusted as an address). */
  | { kind: 'webhook'; url: string }
  /** Decides the call itself; `max` (retry only) is how many times it may run again. */
  | { kind: 'steer'; decision: SteerDecision; reason?: string; max?: number };

export interface DirectiveHook {
  /** The condition as written (CEL, or with Kiwi's and/or/not). */
  when: string;
  /** Where it was written, for the hook's own errors. */
  line: number;
  action: HookAction;
  /** The hooks after it run too when it matches (otherwise the first hook that matches an event is the only one that acts). */
  fallthrough?: boolean;
}
