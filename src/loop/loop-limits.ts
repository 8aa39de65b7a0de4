import { KiwiError } from '../base/errors.js';

export interface LoopLimits {
  /** Upstream requests in one client request (the first included). */
  maxTurns: number;
  /**
   * Intents one client request may have: each counts, whether it ran, was denied, was not
   * resolved or was refused as a repeat. Past it an intent is not even resolved, and the request
   * ends after that turn.
   */
  maxToolCalls: number;
  /** Wall time of one client request, upstream and tools included. */
  maxDurationMs: number;
  /** Longest tool result fed back to the agent (and shown to the client); the rest is cut with a note. */
  maxResultChars: number;
  /** The same resolved call (tool and canonical arguments) this many times ends the request. */
  maxRepeats: number;
  /**
   * Tokens one client request may use, input and output of all its upstream turns as the
   * upstream reports them (estimated from the text where it reports none); past it no further
   * turn starts (0: no limit).
   */
  maxTokens: number;
}

export interface LimitRange {
  /** Its key under `limits:` in gateway.yaml. */
  key: string;
  default: number;
  min: number;
  max: number;
  /** Said when the value is below `min`, where the bare number would not say why. */
  tooLow?: string;
}

/**
 * The one table of the agent loop's limits: the config (gateway.yaml `limits:`) and the loop read
 * their defaults and their ranges here, so a value one accepts the other never refuses.
 */
export const LOOP_LIMITS: { readonly [K in keyof LoopLimits]: LimitRange } = {
  maxTurns: { key: 'max_turns', default: 8, min: 1, max: 1000 },
  maxToolCalls: { key: 'max_tool_calls', default: 16, min: 1, max: 10_000 },
  // Up to a day: a directive's thread may run long; setTimeout takes no more than about 24.8 days anyway.
  maxDurationMs: { key: 'max_duration_ms', default: 300_000, min: 1, max: 86_400_000 },
  maxResultChars: { key: 'max_result_chars', default: 16_000, min: 64, max: 10_000_000 },
  maxRepeats: { key: 'max_repeats', default: 3, min: 2, max: 1000, tooLow: 'must be at least 2 (a call is refused the max_repeats-th time it is asked for)' },
  maxTokens: { key: 'max_tokens', default: 0, min: 0, max: 1_000_000_000, tooLow: 'must be 0 (no limit) or more' },
};

export const DEFAULT_LOOP_LIMITS: LoopLimits = {
  maxTurns: LOOP_LIMITS.maxTurns.default,
  maxToolCalls: LOOP_LIMITS.maxToolCalls.default,
  maxDurationMs: LOOP_LIMITS.maxDurationMs.default,
  maxResultChars: LOOP_LIMITS.maxResultChars.default,
  maxRepeats: LOOP_LIMITS.maxRepeats.default,
  maxTokens: LOOP_LIMITS.maxTokens.default,
};

/** The limits over the defaults, each checked against its range. */
export function checkLoopLimits(partial: Partial<LoopLimits> | undefined): LoopLimits {
  const limits = { ...DEFAULT_LOOP_LIMITS, ...partial };
  for (const [name, range] of Object.entries(LOOP_LIMITS) as [keyof LoopLimits, LimitRange][]) {
    const value = limits[name];
    if (!Number.isInteger(value) || value < range.min || value > range.max) {
      throw new KiwiError('INVALID_INPUT', `Agent loop limit ${name} must be an integer from ${range.min} to ${range.max}, got ${String(value)}; leave it out for ${range.default}.`);
    }
  }
  return limits;
}
