/**
 * Which keys of a JSON Schema `parameters` object the registry may ignore. MCP servers and OpenAPI
 * specs use the whole JSON Schema vocabulary (`minLength`, `$ref`, `x-…`); the registry models a
 * few keywords and ignores the rest, but a near miss of a modelled key (`descripton`, `requried`)
 * is still a typo to report, because ignoring it would silently change the tool.
 */
import { didYouMean } from '../base/did-you-mean.js';
import { setOwn } from '../base/plain-object.js';

/** JSON Schema 2020-12 and draft-07 keywords, plus OpenAPI 3's additions to Schema Objects. */
const JSON_SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
  '$schema', '$id', '$ref', '$defs', '$anchor', '$dynamicRef', '$dynamicAnchor', '$vocabulary', '$comment', 'definitions',
  'type', 'enum', 'const', 'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly',
  'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'format', 'contentEncoding', 'contentMediaType', 'contentSchema',
  'items', 'prefixItems', 'additionalItems', 'unevaluatedItems', 'contains', 'minContains', 'maxContains', 'maxItems', 'minItems', 'uniqueItems',
  'properties', 'patternProperties', 'additionalProperties', 'unevaluatedProperties', 'propertyNames', 'required',
  'dependentRequired', 'dependentSchemas', 'dependencies', 'maxProperties', 'minProperties',
  'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else',
  'nullable', 'example', 'discriminator', 'xml', 'externalDocs',
]);

/** `format` values of JSON Schema and OpenAPI that the registry does not model: ignored, never a typo. */
const STANDARD_FORMATS: ReadonlySet<string> = new Set([
  'duration', 'hostname', 'idn-hostname', 'idn-email', 'uri-reference',
  'iri', 'iri-reference', 'uri-template', 'json-pointer', 'relative-json-pointer', 'regex',
  'int32', 'int64', 'float', 'double', 'byte', 'binary', 'password',
]);

/**
 * `raw` without the keys the registry ignores: standard keywords it does not model, vendor
 * extensions (`x-…`) and any other key that is not a near miss of a modelled one. What is left
 * goes through the strict schema, so a near miss is reported with its "did you mean".
 */
export function withoutIgnoredKeys(raw: Record<string, unknown>, modelled: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const kept = modelled.includes(key) || (!JSON_SCHEMA_KEYWORDS.has(key) && !key.startsWith('x-') && didYouMean(key, modelled) !== undefined);
    if (kept) setOwn(out, key, value);
  }
  return out;
}

/** Whether a `format` value outside the modelled ones is dropped (a standard or unrelated format) rather than reported as a typo. */
export function isIgnoredFormat(format: string, modelled: readonly string[]): boolean {
  return STANDARD_FORMATS.has(format) || didYouMean(format, modelled) === undefined;
}

/** `type: [string, "null"]` (an optional value in JSON Schema) → `string`; any other value unchanged. */
export function nullableType(type: unknown): unknown {
  if (!Array.isArray(type)) return type;
  const types = type.filter((t) => t !== 'null');
  return types.length === 1 ? types[0] : type;
}

/** A property without `type` whose `anyOf`/`oneOf` is one schema and `null` (an optional value), as that schema with the property's own keys on top. */
export function withNullableUnion(property: Record<string, unknown>): Record<string, unknown> {
  if (Object.hasOwn(property, 'type')) return property;
  for (const key of ['anyOf', 'oneOf']) {
    const members = property[key];
    if (!Array.isArray(members)) continue;
    const real = members.filter((m) => !(m !== null && typeof m === 'object' && (m as Record<string, unknown>)['type'] === 'null'));
    const [only] = real;
    if (real.length === 1 && only !== null && typeof only === 'object' && !Array.isArray(only)) return { ...(only as Record<string, unknown>), ...property };
  }
  return property;
}
