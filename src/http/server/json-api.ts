import type { Context } from 'hono';
import { API_STATUS, ERROR_CODES, isKiwiError, KiwiError } from '../../base/errors.js';
import { readJsonBody } from './read-json-body.js';

/**
 * What the gateway's JSON APIs share (the kernel's /v0 and the admin API): errors as
 * `{"error", "code"}` with the v0 spec's codes, and the checks of ids, bodies and numbers that
 * come from outside.
 */

export const MAX_ID_CHARS = 256;

/**
 * The error's answer, by ERROR_CODES' `api` column. Anything that is not a KiwiError, and the
 * INTERNAL ones, is a bug: told to `onBug` and shown as "internal error".
 */
export function apiError(c: Context, error: unknown, onBug: (error: unknown) => void): Response {
  const code = isKiwiError(error) ? ERROR_CODES[error.code].api : 'INTERNAL_ERROR';
  if (code === 'INTERNAL_ERROR' || !isKiwiError(error)) {
    onBug(error);
    return c.json({ error: 'internal error', code: 'INTERNAL_ERROR' }, 500);
  }
  // The spec maps its 429 "with Retry-After: 5"; the SDK sleeps that long before each retry.
  const headers = code === 'RATE_LIMITED' ? { 'Retry-After': '5' } : undefined;
  return c.json({ error: error.message, code }, API_STATUS[code], headers);
}

/**
 * An id from the path or a body: at most 256 characters, no control characters (a NUL would
 * reach the database). Checked before any lookup, so a bad one is a 400 and never a 500.
 */
export function readId(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new KiwiError('INVALID_INPUT', `the ${what} is required`);
  if (value.length > MAX_ID_CHARS) throw new KiwiError('INVALID_INPUT', `the ${what} is longer than ${MAX_ID_CHARS} characters`);
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new KiwiError('INVALID_INPUT', `the ${what} contains a control character`);
  return value;
}

/** A request body that is a JSON object, capped at `maxBytes`. */
export async function readObject(c: Context, maxBytes: number): Promise<Record<string, unknown>> {
  const body = await readJsonBody(c, maxBytes);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new KiwiError('INVALID_INPUT', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** A whole number in [min, max]: over max is clamped, anything unreadable is the default (v0 §5). */
export function intParam(value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || !/^\d+$/.test(value)) return fallback;
  const n = Number(value);
  if (n < min) return fallback;
  return Math.min(n, max);
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/**
 * A point in time from outside, ISO 8601: a day (`2026-11-28`, its midnight UTC) or a time with
 * its zone (`2026-11-28T09:30:00Z`, `…+02:00`). A time without a zone is refused rather than read
 * in the server's, and a day that does not exist (February 30) rather than moved to March.
 */
export function readTime(value: string, what: string): Date {
  const match = ISO_TIME.exec(value);
  const at = Date.parse(value);
  const day = match === null ? undefined : new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  if (match === null || Number.isNaN(at) || day?.toISOString().slice(0, 10) !== value.slice(0, 10)) {
    throw new KiwiError('INVALID_INPUT', `${what} ${JSON.stringify(value.slice(0, 40))} is not a time: use ISO 8601 with a zone, e.g. 2026-11-28 or 2026-11-28T09:30:00Z`);
  }
  return new Date(at);
}
