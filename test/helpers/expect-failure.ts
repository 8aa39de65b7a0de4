import { expect } from 'vitest';
import { KiwiError, type ErrorCode } from '../../src/errors.js';

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
