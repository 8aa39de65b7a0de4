import { KiwiError } from './errors.js';

/** Throws TOOL_CANCELLED if the signal has already fired, so work that was cancelled never starts. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new KiwiError('TOOL_CANCELLED', `${what} was cancelled before it started`);
}
