/**
 * A tool's `parameters`: a list of `{name, type, required, ...}` entries, or a JSON Schema object
 * (`{type: object, properties, required}`) as MCP servers publish it. Both become `ToolParameter[]`.
 */
import { z } from 'zod';
import type { ParameterType, ToolParameter } from './types.js';
import { isIgnoredFormat, nullableType, withNullableUnion, withoutIgnoredKeys } from './json-schema-keys.js';
import { STRING_FORMATS } from './string-formats.js';
import { compilePattern } from './string-pattern.js';
import { didYouMean } from '../base/did-you-mean.js';
import { formatFieldPath, type IssueInput } from './validation-error.js';
import type { YamlSource } from './yaml-source.js';
import { oneOf, zodIssuesToInputs, type FieldHints } from './zod-issues.js';

/** The types a manifest writes; `any` is what an unknown or missing one becomes (readType). */
export const PARAMETER_TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object'] as const satisfies readonly ParameterType[];

export function isParameterType(value: unknown): value is ParameterType {
  return (PARAMETER_TYPES as readonly unknown[]).includes(value);
}
export const PARAMETER_FORMATS = STRING_FORMATS;
/** Formats of the gateway's own, not JSON Schema's: on a non-string they are a mistake, not an annotation to ignore. */
const OWN_FORMATS: readonly string[] = ['path', 'url'];

const TYPE_ALIASES: Readonly<Record<string, ParameterType>> = {
  str: 'string',
  text: 'string',
  int: 'integer',
  float: 'number',
  double: 'number',
  bool: 'boolean',
  list: 'array',
  dict: 'object',
  map: 'object',
};

/** A name in any script (MCP servers and OpenAPI specs publish `größe`, `名称`); one outside this is kept with a warning. */
const PARAMETER_NAME = /^[\p{L}_][\p{L}\p{M}\p{N}_.-]{0,127}$/u;
/** What no name may hold: nothing, control characters, or more than 128 characters. */
const UNUSABLE_NAME = /^$|[\u0000-\u001f\u007f]|^.{129,}$/su;

const fieldSchemas = {
  // Any value: a type it does not know becomes `any`, with a warning (readType).
  type: z.unknown().optional(),
  description: z.string().optional(),
  default: z.unknown().optional(),
  enum: z.array(z.unknown()).min(1, { error: 'is empty; list the allowed values, e.g. enum: [fast, slow], or remove enum' }).optional(),
  format: oneOf('parameter format', PARAMETER_FORMATS).optional(),
  access: oneOf('parameter access', ['read', 'write']).optional(),
  allow_flags: z.boolean().optional(),
  // JSON Schema `items` of an array: only a plain type is kept; anything else in it is ignored, not an error.
  items: z.looseObject({ type: z.unknown().optional() }).optional(),
  // An object's fields: read loosely, one level deep (nestedFields); anything in them it cannot use is ignored.
  properties: z.record(z.string(), z.unknown()).optional(),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  pattern: z.string().optional(),
};

const listEntrySchema = z.strictObject({
  name: z.string().superRefine((value, ctx) => {
    if (UNUSABLE_NAME.test(value)) {
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(value.slice(0, 80))} is not a parameter name; write 1 to 128 characters without control characters, e.g. city` });
    }
  }),
  required: z.boolean().optional(),
  ...fieldSchemas,
});

const propertySchema = z.strictObject(fieldSchemas);

// Strict over what is left once the keys the registry ignores are taken out (json-schema-keys.ts).
const jsonSchemaSchema = z.strictObject({
  type: z.literal('object', { error: 'a JSON Schema for parameters must be type: object' }),
  properties: z.record(z.string(), z.unknown()).optional(),
  required: z.array(z.string()).optional(),
});

const LIST_KEYS = Object.keys(listEntrySchema.shape);
const PROPERTY_KEYS = Object.keys(propertySchema.shape);
const SCHEMA_KEYS = Object.keys(jsonSchemaSchema.shape);

const HINTS: FieldHints = {
  parameters: 'a list of {name, type, required} entries, or a JSON Schema object {type: object, properties, required}',
  name: 'a parameter name like city',
  type: `one of ${PARAMETER_TYPES.join(', ')}`,
  required: 'true or false (no quotes)',
  description: 'a string',
  enum: 'a list of allowed values',
  allow_flags: 'true or false (no quotes)',
  properties: 'a mapping of parameter name to {type, description}',
};

export interface ParametersResult {
  parameters: ToolParameter[];
  issues: IssueInput[];
  /** What loads but is not honoured: a pattern RE2 cannot compile is left out, and said so here. */
  warnings: IssueInput[];
}

export function parseParameters(value: unknown, source: YamlSource): ParametersResult {
  if (value === undefined) return { parameters: [], issues: [], warnings: [] };
  if (Array.isArray(value)) return parseList(value, source);
  if (value !== null && typeof value === 'object') return parseJsonSchema(value, source);
  const issue: IssueInput = {
    field: 'parameters',
    text: `expected ${HINTS['parameters']}, got ${value === null ? 'nothing' : typeof value}`,
  };
  const pos = source.locate(['parameters']);
  return { parameters: [], issues: [pos === undefined ? issue : { ...issue, ...pos }], warnings: [] };
}

function parseList(value: unknown[], source: YamlSource): ParametersResult {
  const result = z.array(listEntrySchema).safeParse(value, { reportInput: true });
  if (!result.success) {
    return {
      parameters: [],
      issues: zodIssuesToInputs(result.error.issues, {
        source,
        hints: HINTS,
        basePath: ['parameters'],
        allowedKeys: () => LIST_KEYS,
      }),
      warnings: [],
    };
  }
  const issues: IssueInput[] = [];
  const warnings: IssueInput[] = [];
  const parameters: ToolParameter[] = [];
  const seen = new Set<string>();
  result.data.forEach((entry, index) => {
    const path = ['parameters', index];
    if (seen.has(entry.name)) {
      issues.push(at(source, [...path, 'name'], `parameter "${entry.name}" is declared twice; rename or remove one`));
    }
    seen.add(entry.name);
    const { parameter, leniencies } = toParameter(entry.name, entry, entry.required ?? false, path, source);
    issues.push(...checkParameter(parameter, path, source));
    warnings.push(...leniencies, ...keepCompilablePattern(parameter, path, source));
    parameters.push(parameter);
  });
  return { parameters, issues, warnings };
}

function parseJsonSchema(value: object, source: YamlSource): ParametersResult {
  const schema = jsonSchemaSchema.safeParse(withoutIgnoredKeys(value as Record<string, unknown>, SCHEMA_KEYS), { reportInput: true });
  if (!schema.success) {
    return {
      parameters: [],
      issues: zodIssuesToInputs(schema.error.issues, {
        source,
        hints: HINTS,
        basePath: ['parameters'],
        allowedKeys: () => SCHEMA_KEYS,
      }),
      warnings: [],
    };
  }
  const issues: IssueInput[] = [];
  const warnings: IssueInput[] = [];
  const parameters: ToolParameter[] = [];
  const properties = schema.data.properties ?? {};
  const required = new Set(schema.data.required ?? []);
  for (const [name, raw] of Object.entries(properties)) {
    const path = ['parameters', 'properties', name];
    if (UNUSABLE_NAME.test(name)) {
      issues.push(at(source, path, `${JSON.stringify(name.slice(0, 80))} is not a parameter name; write 1 to 128 characters without control characters, e.g. city`));
      continue;
    }
    if (raw !== null && typeof raw === 'object' && typeof (raw as Record<string, unknown>)['required'] === 'boolean') {
      // The list form's `required: true` is silently meaningless in a JSON Schema property; say where it goes.
      issues.push(at(source, [...path, 'required'], `in a JSON Schema, required parameters are listed once under parameters.required (e.g. required: [${name}]); remove it here`));
      continue;
    }
    const property = propertySchema.safeParse(jsonSchemaProperty(raw), { reportInput: true });
    if (!property.success) {
      issues.push(
        ...zodIssuesToInputs(property.error.issues, { source, hints: HINTS, basePath: path, allowedKeys: () => PROPERTY_KEYS }),
      );
      continue;
    }
    const { parameter, leniencies } = toParameter(name, property.data, required.has(name), path, source);
    issues.push(...checkParameter(parameter, path, source));
    warnings.push(...leniencies, ...keepCompilablePattern(parameter, path, source));
    parameters.push(parameter);
  }
  for (const name of required) {
    if (!(name in properties)) {
      issues.push(
        at(source, ['parameters', 'required'], `"${name}" is required but not among the properties; add it under properties or remove it here`),
      );
    }
  }
  return { parameters, issues, warnings };
}

/**
 * One JSON Schema property as the registry models it: ignored keywords and formats out, `[T, "null"]`
 * read as T, and `anyOf`/`oneOf` of one schema and `null` (how pydantic and zod write an optional
 * value) read as that schema, its own keys winning.
 */
function jsonSchemaProperty(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const union = withNullableUnion(raw as Record<string, unknown>);
  const kept = withoutIgnoredKeys(union, PROPERTY_KEYS);
  if (Object.hasOwn(kept, 'type')) kept['type'] = nullableType(kept['type']);
  // A union of several schemas is not guessed at: its member types are kept as the type, which readType takes as any value.
  else kept['type'] = unionTypes(union);
  const format = kept['format'];
  if (typeof format === 'string' && !(PARAMETER_FORMATS as readonly string[]).includes(format) && isIgnoredFormat(format, PARAMETER_FORMATS)) delete kept['format'];
  // JSON Schema's formats annotate strings only; on another type (`{type: integer, format: date}`) they say nothing.
  else if (typeof format === 'string' && !OWN_FORMATS.includes(format) && !isStringType(kept['type'])) delete kept['format'];
  return kept;
}

/** The types of an `anyOf`/`oneOf` (undefined when there is none), for the warning that names them. */
function unionTypes(property: Record<string, unknown>): unknown {
  const members = property['anyOf'] ?? property['oneOf'];
  if (!Array.isArray(members)) return undefined;
  return members.map((m) => (m !== null && typeof m === 'object' ? (m as Record<string, unknown>)['type'] : undefined) ?? 'schema');
}

function isStringType(type: unknown): boolean {
  return readType(type).type === 'string';
}

type Fields = {
  type?: unknown;
  description?: string | undefined;
  default?: unknown;
  enum?: unknown[] | undefined;
  format?: string | undefined;
  access?: string | undefined;
  allow_flags?: boolean | undefined;
  items?: { type?: unknown } | undefined;
  properties?: Record<string, unknown> | undefined;
  minimum?: number | undefined;
  maximum?: number | undefined;
  pattern?: string | undefined;
};

/**
 * The type a schema writes, read the way catalogs write it: any case (`String`), Kiwi's aliases
 * (`str`, `int`), `[T, "null"]` as T. Anything else (`any`, a type it does not know, several
 * types, none at all) is `any`, and said so, unless it is plainly `any` or absent.
 */
export function readType(raw: unknown): { type: ParameterType; warning?: string } {
  if (raw === undefined || raw === 'any') return { type: 'any' };
  if (typeof raw !== 'string') return { type: 'any', warning: `its type ${JSON.stringify(raw).slice(0, 80)} is not one type; any value is taken` };
  if (isParameterType(raw)) return { type: raw };
  const lower = raw.toLowerCase();
  const known = isParameterType(lower) ? lower : Object.hasOwn(TYPE_ALIASES, lower) ? TYPE_ALIASES[lower] : undefined;
  if (known !== undefined) return { type: known, warning: `its type ${JSON.stringify(raw.slice(0, 40))} is read as ${known}` };
  const near = didYouMean(lower, [...PARAMETER_TYPES, ...Object.keys(TYPE_ALIASES)]);
  const hint = near === undefined ? '' : ` (did you mean "${Object.hasOwn(TYPE_ALIASES, near) ? TYPE_ALIASES[near] : near}"?)`;
  return { type: 'any', warning: `its type ${JSON.stringify(raw.slice(0, 40))} is not one of ${PARAMETER_TYPES.join(', ')}; any value is taken${hint}` };
}

function toParameter(name: string, fields: Fields, required: boolean, path: PropertyKey[], source: YamlSource): { parameter: ToolParameter; leniencies: IssueInput[] } {
  const leniencies: IssueInput[] = [];
  const type = readType(fields.type);
  if (type.warning !== undefined) leniencies.push(at(source, [...path, 'type'], `parameter \`${name}\`: ${type.warning}`));
  if (!PARAMETER_NAME.test(name)) leniencies.push(at(source, path, `parameter ${JSON.stringify(name.slice(0, 80))} is named with characters other than letters, digits, "_", "." and "-"; it is kept as written`));
  const parameter: ToolParameter = { name, type: type.type, required };
  if (fields.description !== undefined) parameter.description = fields.description;
  // `default: null` (an optional value's schema) means no default, not "send null".
  if (fields.default !== undefined && fields.default !== null) parameter.default = fields.default;
  if (fields.enum !== undefined) parameter.enum = fields.enum;
  if (fields.format !== undefined) parameter.format = fields.format as NonNullable<ToolParameter['format']>;
  if (fields.access !== undefined) parameter.access = fields.access as NonNullable<ToolParameter['access']>;
  if (fields.allow_flags !== undefined) parameter.allowFlags = fields.allow_flags;
  // As in JSON Schema, a bound applies only to numbers and a pattern only to strings; elsewhere they say nothing.
  const numeric = parameter.type === 'number' || parameter.type === 'integer';
  if (numeric && fields.minimum !== undefined) parameter.minimum = fields.minimum;
  if (numeric && fields.maximum !== undefined) parameter.maximum = fields.maximum;
  if (parameter.type === 'string' && fields.pattern !== undefined) parameter.pattern = fields.pattern;
  const itemType = fields.items?.type;
  if (isParameterType(itemType)) parameter.items = { type: itemType };
  if (parameter.type === 'object' && fields.properties !== undefined) {
    const nested = nestedFields(fields.properties);
    if (nested.length > 0) parameter.properties = nested;
  }
  // A default its enum does not list (catalogs publish them) is kept; calls are still checked against the enum.
  if (parameter.enum !== undefined && parameter.default !== undefined && !parameter.enum.some((v) => sameValue(v, parameter.default))) {
    leniencies.push(at(source, [...path, 'default'], `parameter \`${name}\`: its default ${JSON.stringify(parameter.default).slice(0, 80)} is not one of its enum values ${parameter.enum.map((v) => JSON.stringify(v)).join(', ').slice(0, 200)}; it is kept`));
  }
  return { parameter, leniencies };
}

/** An object's fields are read only this many; a schema that lists more is describing data, not a call. */
const MAX_NESTED_FIELDS = 32;

/**
 * The fields of an object parameter, one level deep: name, plain type, description, enum. Nothing
 * in them is an error (the object itself is what the call is checked against); what cannot be
 * read is left out.
 */
function nestedFields(properties: Record<string, unknown>): ToolParameter[] {
  const out: ToolParameter[] = [];
  for (const [name, raw] of Object.entries(properties)) {
    if (out.length >= MAX_NESTED_FIELDS) break;
    if (UNUSABLE_NAME.test(name) || raw === null || typeof raw !== 'object' || Array.isArray(raw)) continue;
    const field = raw as Record<string, unknown>;
    const type = readType(nullableType(field['type'])).type;
    const parameter: ToolParameter = { name, type, required: false };
    if (typeof field['description'] === 'string') parameter.description = field['description'];
    if (Array.isArray(field['enum']) && field['enum'].length > 0) parameter.enum = field['enum'];
    out.push(parameter);
  }
  return out;
}

/** Combinations zod cannot see field by field. */
function checkParameter(parameter: ToolParameter, path: PropertyKey[], source: YamlSource): IssueInput[] {
  const issues: IssueInput[] = [];
  if (parameter.format !== undefined && parameter.type !== 'string') {
    issues.push(at(source, [...path, 'format'], `format applies only to type: string; change the type to string or remove format`));
  }
  if (parameter.access !== undefined && parameter.format !== 'path') {
    issues.push(at(source, [...path, 'access'], 'access applies only to paths; add format: path or remove access'));
  }
  if (parameter.minimum !== undefined && parameter.maximum !== undefined && parameter.minimum > parameter.maximum) {
    issues.push(at(source, [...path, 'minimum'], `minimum ${parameter.minimum} is greater than maximum ${parameter.maximum}; swap them or remove one`));
  }
  return issues;
}

/**
 * A pattern RE2 cannot compile (lookaround, a backreference, too long) is dropped from the
 * parameter, so nothing downstream meets it; the tool still loads, and the warning says why.
 */
function keepCompilablePattern(parameter: ToolParameter, path: PropertyKey[], source: YamlSource): IssueInput[] {
  if (parameter.pattern === undefined) return [];
  const compiled = compilePattern(parameter.pattern);
  if (compiled.ok) return [];
  delete parameter.pattern;
  return [at(source, [...path, 'pattern'], `the pattern of parameter \`${parameter.name}\` is not enforced: ${compiled.reason}; the tool loads, and its values are not checked against the pattern`)];
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function at(source: YamlSource, path: PropertyKey[], text: string): IssueInput {
  const field = formatFieldPath(path);
  const pos = source.locate(path);
  return pos === undefined ? { field, text } : { field, text, ...pos };
}
