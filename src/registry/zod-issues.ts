/** Turns zod issues into messages that say which field is wrong and what to write instead. */
import { z } from 'zod';
import { describeValue, formatFieldPath, type IssueInput } from './validation-error.js';
import { didYouMeanSuffix } from '../base/did-you-mean.js';
import type { YamlSource } from './yaml-source.js';

/** What to write, by field name; used when a value has the wrong type or is missing. */
export type FieldHints = Readonly<Record<string, string>>;

const GENERIC_HINTS: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false (no quotes)',
  array: 'a list',
  object: 'a mapping of key: value',
  record: 'a mapping of key: value',
};

/** A string field that must be one of `options`; the message offers the closest one. */
export function oneOf(what: string, options: readonly string[], aliases: Readonly<Record<string, string>> = {}) {
  return z.string().superRefine((value, ctx) => {
    if (options.includes(value)) return;
    const alias = aliases[value.toLowerCase()];
    const hint = alias === undefined ? didYouMeanSuffix(value, options) : ` (did you mean "${alias}"?)`;
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(value)} is not a ${what}; write one of ${options.join(', ')}${hint}`,
    });
  });
}

export interface IssueContext {
  source: YamlSource | undefined;
  hints: FieldHints;
  /** Prefix for paths, when only part of the document was parsed. */
  basePath?: ReadonlyArray<PropertyKey>;
  /** The keys the mapping at `path` allows, for unknown-key messages. */
  allowedKeys?: (path: ReadonlyArray<PropertyKey>) => readonly string[];
}

export function zodIssuesToInputs(issues: readonly z.core.$ZodIssue[], context: IssueContext): IssueInput[] {
  const out: IssueInput[] = [];
  for (const issue of issues) {
    const path = [...(context.basePath ?? []), ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      const known = context.allowedKeys?.(path) ?? [];
      for (const key of issue.keys) out.push(unknownKey(path, key, known, context.source));
      continue;
    }
    const input: IssueInput = { field: formatFieldPath(path), text: describeIssue(issue, path, context.hints) };
    const pos = context.source?.locate(path);
    if (pos !== undefined) Object.assign(input, pos);
    out.push(input);
  }
  return out;
}

function unknownKey(path: PropertyKey[], key: string, known: readonly string[], source: YamlSource | undefined): IssueInput {
  const suffix = known.length > 0 ? didYouMeanSuffix(key, known) : '';
  const input: IssueInput = {
    field: formatFieldPath([...path, key]),
    text: `unknown key; remove it${known.length > 0 ? ` or use one of ${known.join(', ')}` : ''}${suffix}`,
  };
  const pos = source?.locateKey(path, key);
  if (pos !== undefined) Object.assign(input, pos);
  return input;
}

function describeIssue(issue: z.core.$ZodIssue, path: PropertyKey[], hints: FieldHints): string {
  // Hints describe a field; an element of a list (`tags[0]`) gets the generic wording.
  const lastPart = path[path.length - 1];
  const last = typeof lastPart === 'string' ? lastPart : '';
  if (issue.code === 'custom') return issue.message;
  if (issue.code === 'invalid_type') {
    const hint = hints[last] ?? GENERIC_HINTS[issue.expected] ?? issue.expected;
    if (issue.input === undefined) return `is missing; write ${hint}`;
    if (issue.input === null) return `has no value; write ${hint}, or remove the key`;
    return `expected ${hint}, got ${describeValue(issue.input)}${typeNote(issue.expected, issue.input)}`;
  }
  if (issue.code === 'invalid_value') {
    const options = issue.values.map((v) => String(v));
    return `${describeValue(issue.input)} is not allowed; write ${options.length === 1 ? options[0] : `one of ${options.join(', ')}`}${
      typeof issue.input === 'string' ? didYouMeanSuffix(issue.input, options) : ''
    }`;
  }
  // zod's own wording gets the field's hint; a message written for the schema stands alone.
  const generic = /^(Invalid|Too small|Too big)/.test(issue.message);
  const hint = hints[last];
  return generic && hint !== undefined ? `${issue.message.replace(/^Invalid input: /, '')}; write ${hint}` : issue.message;
}

function typeNote(expected: string, input: unknown): string {
  if (expected === 'boolean' && typeof input === 'string') {
    const lower = input.toLowerCase();
    if (lower === 'true' || lower === 'false') return ' (a quoted string); remove the quotes';
    if (['yes', 'no', 'on', 'off', 'y', 'n'].includes(lower)) return ' (YAML 1.2 reads yes/no/on/off as text); write true or false';
  }
  if (expected === 'string' && typeof input === 'number') return '; put it in quotes';
  return '';
}
