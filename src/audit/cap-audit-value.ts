import { createHash } from 'node:crypto';
import { KiwiError, describeError } from '../base/errors.js';
import { isSecretName, redactSecrets } from './redact-secrets.js';
import { textHead } from '../base/text-cut.js';

/** The key of the object that stands in for a value the audit log cut short. */
export const TRUNCATED_KEY = '$truncated';

const MAX_DEPTH = 64;
const REDACTED = '[redacted:secret]';

/**
 * `value` as JSON text for an audit record: every string redacted (`redactSecrets`), values under
 * secret names (`password`, `apiKey`…) replaced, and each string past `maxStringChars` replaced by
 * a `{ $truncated, bytes, sha256, preview }` marker keeping its first half. The hash is of the
 * redacted text: it still lets an investigator match a payload they hold (redacted the same way)
 * but cannot be used to guess a secret that was cut out. The whole is capped by the caller.
 */
export function auditValueJson(value: unknown, maxStringChars: number): string | undefined {
  try {
    return JSON.stringify(walk(value, maxStringChars, false, new Set(), 0));
  } catch (error) {
    const why = error instanceof KiwiError ? error.message : describeError(error);
    return JSON.stringify({ [TRUNCATED_KEY]: true, unserializable: why.slice(0, 200) });
  }
}

/**
 * `value` as JSON with secrets redacted exactly as the audit log redacts its records, nothing cut:
 * for what leaves the machine (a hook's webhook), which must hold no secret the audit log hides.
 */
export function redactedJson(value: unknown): string {
  return auditValueJson(value, Number.POSITIVE_INFINITY) ?? 'null';
}

/**
 * `value` with secrets redacted as the audit log redacts them, nothing cut: for what the kernel
 * keeps of the gateway's own calls and what it shows to people other than the caller.
 */
export function redactedValue(value: unknown): unknown {
  return JSON.parse(redactedJson(value)) as unknown;
}

/** A string field (reason, error message): redacted, and past `max` characters cut with its size and hash. */
export function capText(value: unknown, max: number): string {
  const text = redactSecrets(typeof value === 'string' ? value : String(value));
  if (text.length <= max) return text;
  const tail = `…[truncated: ${Buffer.byteLength(text)} bytes, sha256 ${sha256(text)}]`;
  return `${textHead(text, Math.max(0, max - tail.length))}${tail}`;
}

/** A JSON value as a marker of at most `budget` bytes (once `budget` is over ~200) that keeps a prefix of it. */
export function truncationMarker(json: string, budget: number): string {
  const bytes = Buffer.byteLength(json);
  const hash = sha256(json);
  let take = Math.max(0, Math.min(json.length, budget - 160));
  for (;;) {
    const marker = JSON.stringify({ [TRUNCATED_KEY]: true, bytes, sha256: hash, preview: textHead(json, take) });
    const over = Buffer.byteLength(marker) - budget;
    if (over <= 0 || take === 0) return marker;
    take = Math.max(0, take - over);
  }
}

function walk(value: unknown, maxStringChars: number, secret: boolean, ancestors: Set<object>, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      return secret ? REDACTED : capString(value, maxStringChars);
    case 'number':
      return secret ? REDACTED : Number.isFinite(value) ? value : null;
    case 'boolean':
      return value;
    case 'bigint':
      throw new KiwiError('INVALID_INPUT', 'a BigInt value cannot be written as JSON');
    case 'object':
      break;
    default:
      return undefined; // undefined, functions, symbols: left out, as JSON.stringify does
  }
  if (value === null) return null;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return walk(toJSON.call(value), maxStringChars, secret, ancestors, depth);
  if (ancestors.has(value)) throw new KiwiError('INVALID_INPUT', 'a circular structure cannot be written as JSON');
  if (depth >= MAX_DEPTH) return { [TRUNCATED_KEY]: true, nested_deeper_than: MAX_DEPTH };
  ancestors.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => walk(item, maxStringChars, secret, ancestors, depth + 1) ?? null);
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key.length > maxStringChars ? capText(key, maxStringChars) : key] = walk(item, maxStringChars, secret || isSecretName(key), ancestors, depth + 1);
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

function capString(value: string, max: number): unknown {
  const text = redactSecrets(value);
  if (text.length <= max) return text;
  return { [TRUNCATED_KEY]: true, bytes: Buffer.byteLength(text), sha256: sha256(text), preview: textHead(text, Math.floor(max / 2)) };
}

/** The first `chars` UTF-16 units, without splitting a surrogate pair. */
function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
