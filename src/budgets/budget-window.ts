import { KiwiError } from '../base/errors.js';

/**
 * A client budget's window: `Nh` or `Nd`, fixed and aligned to the epoch in UTC (a `1d` window
 * starts at 00:00 UTC), so every gateway, and a restarted one, agrees on when it starts afresh.
 */

export const WINDOW = /^([1-9]\d{0,3})(h|d)$/;
const HOUR_MS = 3_600_000;
export const MAX_WINDOW_MS = 31 * 24 * HOUR_MS;

/** The window's length, or undefined when it is not `Nh`/`Nd` up to 31 days. */
export function parseWindow(text: string): number | undefined {
  const m = WINDOW.exec(text);
  const ms = m === null ? NaN : Number(m[1]) * (m[2] === 'd' ? 24 : 1) * HOUR_MS;
  return ms <= MAX_WINDOW_MS ? ms : undefined;
}

export function windowMs(text: string): number {
  const ms = parseWindow(text);
  if (ms === undefined) throw new KiwiError('INVALID_INPUT', `budget window ${JSON.stringify(text)} is not a number of hours or days up to 31 days, e.g. 1h, 12h, 1d or 7d`);
  return ms;
}

export function windowStart(now: number, ms: number): number {
  return Math.floor(now / ms) * ms;
}

/** Ledger totals are kept per hour; every window is a whole number of hours. */
export const hourOf = (at: number): number => windowStart(at, HOUR_MS);
export { HOUR_MS };
