import type { z } from 'zod';
import { KiwiError } from '../../base/errors.js';

/** The INVALID_INPUT errors the body readers raise, each naming the field at fault as the client wrote it. */

const REQUIRED = 'is required';

/** Per-parse zod error map: a missing field says so, instead of "expected string, received undefined". */
export const parseErrors = {
  error: (issue: { code?: string; input?: unknown }): string | undefined => (issue.code === 'invalid_type' && issue.input === undefined ? REQUIRED : undefined),
};

/** `['messages', 0, 'content']` → `messages[0].content`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

export function badField(path: string, problem: string): KiwiError {
  return new KiwiError('INVALID_INPUT', `${path} ${problem}`, { details: { param: path } });
}

/** The first problem zod found in a body, as a field error. */
export function bodyIssue(error: z.ZodError, what: string): KiwiError {
  const issue = error.issues[0];
  if (issue === undefined) return new KiwiError('INVALID_INPUT', `The ${what} body is invalid`);
  if (issue.path.length === 0) return new KiwiError('INVALID_INPUT', `The ${what} body must be a JSON object (${issue.message})`);
  const path = fieldPath(issue.path);
  if (issue.message === REQUIRED) return badField(path, `is required in a ${what} body`);
  return badField(path, `is invalid: ${issue.message}`);
}

/** Media the gateway does not forward yet; the message says so instead of dropping them. */
export const MEDIA_PARTS: ReadonlySet<string> = new Set(['image', 'image_url', 'input_image', 'audio', 'input_audio', 'file', 'input_file', 'document']);

export function mediaPart(path: string, type: string): KiwiError {
  return badField(path, `is a "${type}" part; the gateway forwards text only for now: send the content as text`);
}

export function unknownPart(path: string, type: string, known: string): KiwiError {
  return badField(path, `has type "${type}", which the gateway does not read; send ${known}`);
}
