/**
 * The parts of an OpenAPI 3.x document the importer reads (openapi-import.ts): local `$ref`s
 * resolved (an external one is refused, a cycle stops), and a JSON Schema read down to a tool
 * parameter's type, enum, default and description.
 */

import { isPlainObject as isObject } from '../base/plain-object.js';
import { textHead } from '../base/text-cut.js';
import { oneLine } from './tool-document.js';

export { isObject };

export type Json = Record<string, unknown>;

/** The value `#/a/b` names in the document, `$ref`s followed (at most 32 deep); undefined for an external or missing one. */
export function deref(doc: Json, value: unknown): Json | undefined {
  let current = value;
  for (let depth = 0; depth < 32; depth++) {
    if (!isObject(current)) return undefined;
    const ref = current['$ref'];
    if (typeof ref !== 'string') return current;
    if (!ref.startsWith('#/')) return undefined;
    let target: unknown = doc;
    for (const raw of ref.slice(2).split('/')) {
      const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      target = isObject(target) ? target[key] : undefined;
    }
    current = target;
  }
  return undefined;
}

export type ParamType = 'string' | 'number' | 'integer' | 'boolean' | 'array' | 'object' | 'any';

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);

/** A schema's type: its `type` (the first not `null` of a 3.1 list), else object when it has properties, else any. */
export function schemaType(schema: Json | undefined): ParamType {
  if (schema === undefined) return 'any';
  const raw = schema['type'];
  const named = Array.isArray(raw) ? raw.find((t) => t !== 'null') : raw;
  if (typeof named === 'string' && TYPES.has(named)) return named as ParamType;
  if (isObject(schema['properties'])) return 'object';
  return 'any';
}

/** What a manifest's parameter takes from a schema: its type, and its enum, default and item type when they are plain. */
export function schemaFields(doc: Json, schema: Json | undefined): Json {
  const type = schemaType(schema);
  const out: Json = { type };
  if (schema === undefined) return out;
  const values = schema['enum'];
  if (Array.isArray(values) && values.length > 0 && values.length <= 200 && values.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) out['enum'] = values;
  const fallback = schema['default'];
  if (fallback !== undefined && (typeof fallback !== 'object' || fallback === null)) out['default'] = fallback;
  if (type === 'array') {
    const items = schemaType(deref(doc, schema['items']));
    if (items !== 'any' && items !== 'array' && items !== 'object') out['items'] = { type: items };
  }
  return out;
}

/** A description as one line of at most `max` characters; undefined for none. */
export function summaryText(text: unknown, max = 300): string | undefined {
  if (typeof text !== 'string') return undefined;
  const flat = oneLine(text);
  if (flat === '') return undefined;
  return flat.length > max ? `${textHead(flat, max - 1)}…` : flat;
}
