import { KiwiError } from '../base/errors.js';
import { parseJsonPath, queryJsonPath } from './json-path.js';
import type { ResponseTransform } from './plan-types.js';

/**
 * The small `response_transform` of `api` tools: pick a sub-value by dotted path (`data.items[0].name`),
 * or by Kiwi's JSONPath (json-path.ts), keep only some fields of each object, and cap list length.
 * Deliberately no expressions.
 */
export function applyTransform(value: unknown, transform: ResponseTransform): unknown {
  let out = transform.path ? queryJsonPath(value, parseJsonPath(transform.path)) : value;
  if (transform.pick) out = pick(out, transform.pick);
  if (transform.fields) out = keepFields(out, transform.fields);
  if (transform.maxItems !== undefined && Array.isArray(out)) out = out.slice(0, transform.maxItems);
  return out;
}

const SEGMENT = /^([A-Za-z0-9_$-]+)?((?:\[\d+\])*)$/;

function pick(value: unknown, dotted: string): unknown {
  let current: unknown = value;
  for (const part of dotted.split('.')) {
    const m = SEGMENT.exec(part);
    if (!m) throw new KiwiError('CHAIN_INVALID', `response_transform.pick: \`${dotted}\` is not a path like data.items[0].name`);
    if (m[1] !== undefined) current = field(current, m[1]);
    for (const idx of (m[2] ?? '').matchAll(/\[(\d+)\]/g)) current = Array.isArray(current) ? current[Number(idx[1])] : undefined;
  }
  return current;
}

function field(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
  return (value as Record<string, unknown>)[key];
}

function keepFields(value: unknown, fields: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => keepFields(v, fields));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const f of fields) if (Object.hasOwn(value, f)) out[f] = (value as Record<string, unknown>)[f];
  return out;
}
