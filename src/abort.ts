import { setTimeout as sleep } from 'node:timers/promises';
import { KiwiError } from './errors.js';

/** Throws TOOL_CANCELLED if the signal has already fired, so work that was cancelled never starts. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new KiwiError('TOOL_CANCELLED', `${what} was cancelled before it started`);
}

/** Waits `ms`, or less when `signal` fires: true when the time passed, false when it was cut short. */
export function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return sleep(ms, true, signal ? { signal } : {}).catch(() => false);
}
