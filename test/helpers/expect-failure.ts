import { expect } from 'vitest';
import { isKiwiError, KiwiError, type ErrorCode } from '../../src/base/errors.js';

/** Awaits a promise that must reject with a KiwiError of the given code, and returns the error. */
export async function failure(promise: Promise<unknown>, code: ErrorCode): Promise<KiwiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(KiwiError);
  expect((error as KiwiError).code, (error as KiwiError).message).toBe(code);
  return error as KiwiError;
}

/** How a promise was refused, as `CODE: message` for a KiwiError (anything else as text), or 'not refused': one string a test can match whole. */
export async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return isKiwiError(error) ? `${error.code}: ${error.message}` : String(error);
  }
  return 'not refused';
}
