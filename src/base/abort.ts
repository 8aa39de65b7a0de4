import { setTimeout as sleep } from 'node:timers/promises';
import { isKiwiError, KiwiError } from './errors.js';

/** Throws TOOL_CANCELLED if the signal has already fired, so work that was cancelled never starts. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new KiwiError('TOOL_CANCELLED', `${what} was cancelled before it started`);
}

/** Waits `ms`, or less when `signal` fires: true when the time passed, false when it was cut short. */
export function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return sleep(ms, true, signal ? { signal } : {}).catch(() => false);
}

/**
 * A controller of the work's own that follows `outer`: aborted with its reason (at once when it
 * already is), and abortable alone. Not AbortSignal.any: on Node 20 a signal linked that way stays
 * linked to a long-lived one (a leak). `unlink()` in the work's `finally` takes the listener off.
 */
export function followSignal(outer: AbortSignal | undefined): { controller: AbortController; signal: AbortSignal; unlink(): void } {
  const controller = new AbortController();
  const forward = (): void => controller.abort(outer?.reason);
  if (outer?.aborted) forward();
  else outer?.addEventListener('abort', forward, { once: true });
  return { controller, signal: controller.signal, unlink: () => outer?.removeEventListener('abort', forward) };
}

/** What an audit record's `cancelled` says for a call cut because the gateway stopped. */
export const GATEWAY_STOPPING = 'gateway stopping';

/**
 * The reason the requests and tool calls still running when the shutdown's grace period ends are
 * aborted with: a client reads it as the stream's last event (503: send it again), the audit
 * record's `cancelled` as `gateway stopping`.
 */
export function gatewayStopping(graceMs: number): KiwiError {
  return new KiwiError('UNAVAILABLE', `The gateway is stopping (requests running when it was told to stop get ${graceMs / 1000} s to finish): this request and its running tools were cancelled. Send it again once the gateway is back, or to another replica.`, {
    details: { cancelled: GATEWAY_STOPPING },
  });
}

/** The `cancelled` detail of an error that cancelled work on purpose (gatewayStopping's), else undefined. */
export function cancelledBecause(error: unknown): string | undefined {
  const said = isKiwiError(error) ? error.details?.['cancelled'] : undefined;
  return typeof said === 'string' ? said : undefined;
}

/** Why a signal was aborted, in words for a record: a reason's own `cancelled` detail, else its message. */
export function abortReasonText(reason: unknown): string {
  const said = cancelledBecause(reason);
  if (said !== undefined) return said;
  return reason instanceof Error && reason.message !== '' && reason.name !== 'AbortError' ? reason.message : 'cancelled';
}
