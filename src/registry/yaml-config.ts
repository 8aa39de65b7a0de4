import { z } from 'zod';
import { didYouMeanSuffix } from '../base/did-you-mean.js';
import { KiwiError } from '../base/errors.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { formatFieldPath } from './validation-error.js';
import { parseYamlSource, yamlFailure, type YamlSource } from './yaml-source.js';

/**
 * The one loader of `.ai/config/*.yaml` (gateway, policy, resolver, kernel policy): a capped
 * read, YAML with positions, a zod schema that holds the defaults. Every mistake is reported as
 * `FILE:LINE:COL: PATH: MESSAGE`, an unknown key with a did-you-mean and the fields it could be.
 */

export interface ConfigSpec<S extends z.ZodType> {
  /** The file as people know it, at the start of every message. */
  shown: string;
  schema: S;
  /** The code every failure throws with. */
  code?: 'INVALID_INPUT' | 'INVALID_POLICY';
  /** Where the fix is explained, after the messages ("see the comments in …"). */
  hint?: string;
  /** The message for an empty file; without it an empty file is `{}`, all defaults. */
  whenEmpty?: string;
}

export interface ReadSpec {
  shown: string;
  maxBytes: number;
  code?: 'INVALID_INPUT' | 'INVALID_POLICY';
  signal?: AbortSignal;
}

export interface CheckedConfig<T> {
  data: T;
  /** Absent for data that was not read from YAML text. */
  source?: YamlSource;
  /** Throws at `path` in the one format: for the checks that span fields. */
  fail(path: ReadonlyArray<PropertyKey>, message: string): never;
}

const MAX_REPORTED = 5;

/** The text of `file`, or undefined when there is none; too large or unreadable throws. */
export async function readConfigText(file: string, spec: ReadSpec): Promise<string | undefined> {
  const code = spec.code ?? 'INVALID_INPUT';
  const tooLarge = (size: number) => new KiwiError(code, `${spec.shown}: is ${size} bytes, larger than the ${spec.maxBytes} allowed; it should be a few lines`);
  try {
    return (await readCappedFile(file, spec.maxBytes, tooLarge, spec.signal)).toString('utf8');
  } catch (error) {
    if (error instanceof KiwiError) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if ((error as Error).name === 'AbortError') throw new KiwiError('TOOL_CANCELLED', `reading ${spec.shown} was cancelled`, { cause: error });
    throw new KiwiError(code, `${spec.shown}: cannot be read (${(error as Error).message}); check the file's permissions`, { cause: error });
  }
}

/** `file` read and checked; undefined when it does not exist. */
export async function loadYamlConfig<S extends z.ZodType>(
  file: string,
  spec: ConfigSpec<S> & Omit<ReadSpec, 'shown' | 'code'>,
): Promise<(CheckedConfig<z.output<S>> & { text: string }) | undefined> {
  const text = await readConfigText(file, spec);
  return text === undefined ? undefined : { ...parseYamlConfig(text, spec), text };
}

/** YAML text parsed with positions and checked against the spec's schema. */
export function parseYamlConfig<S extends z.ZodType>(text: string, spec: ConfigSpec<S>): CheckedConfig<z.output<S>> {
  const parsed = parseYamlSource(text);
  if (!parsed.ok) throw new KiwiError(spec.code ?? 'INVALID_INPUT', yamlFailure(spec.shown, parsed.errors));
  return checkConfig(parsed.value.data, spec, parsed.value);
}

/** Plain data checked against the spec's schema; `source` gives the messages their lines. */
export function checkConfig<S extends z.ZodType>(data: unknown, spec: ConfigSpec<S>, source?: YamlSource): CheckedConfig<z.output<S>> {
  const code = spec.code ?? 'INVALID_INPUT';
  const finish = (lines: string[]): string => `${lines.join('\n')}${spec.hint === undefined ? '' : `; ${spec.hint}`}`;
  const fail = (path: ReadonlyArray<PropertyKey>, message: string): never => {
    throw new KiwiError(code, finish([line(spec.shown, source?.locate(path), path, message)]));
  };
  if ((data === null || data === undefined) && spec.whenEmpty !== undefined) return fail([], spec.whenEmpty);
  const checked = spec.schema.safeParse(data ?? {}, { error: plainWords, reportInput: true });
  if (!checked.success) {
    // An unknown key is usually a typo, which also explains a "missing" field: reported first.
    const issues = [...checked.error.issues].sort((a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'));
    const lines = issues.flatMap((issue) => issueLines(issue, spec, source)).slice(0, MAX_REPORTED);
    throw new KiwiError(code, finish(lines), { details: { file: spec.shown, issues: checked.error.issues } });
  }
  return { data: checked.data, ...(source === undefined ? {} : { source }), fail };
}

function issueLines(issue: z.core.$ZodIssue, spec: ConfigSpec<z.ZodType>, source: YamlSource | undefined): string[] {
  if (issue.code !== 'unrecognized_keys') return [line(spec.shown, source?.locate(issue.path), issue.path, issue.message)];
  const fields = fieldsAt(spec.schema, issue.path);
  return issue.keys.map((key) => {
    const listed = fields.length === 0 ? '' : `; the fields here are ${fields.join(', ')}`;
    return line(spec.shown, source?.locateKey(issue.path, key), [...issue.path, key], `unknown field${didYouMeanSuffix(key, fields)}${listed}`);
  });
}

function line(shown: string, pos: { line: number; column: number } | undefined, path: ReadonlyArray<PropertyKey>, message: string): string {
  return `${pos === undefined ? shown : `${shown}:${pos.line}:${pos.column}`}: ${formatFieldPath(path) || '(top level)'}: ${message}`;
}

/** Zod's own wording of a wrong type, for the fields whose schema gives none. */
function plainWords(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code !== 'invalid_type') return undefined;
  if (issue.input === undefined) return 'is required';
  if (issue.expected === 'array') return 'must be a list (e.g. `[a, b]`)';
  if (issue.expected === 'object' || issue.expected === 'record') return 'must be a mapping (`key: value` lines)';
  return `must be a ${issue.expected}`;
}

type Def = { type: string; innerType?: unknown; in?: unknown; out?: unknown; element?: unknown; valueType?: unknown; options?: unknown[]; left?: unknown; right?: unknown; shape?: Record<string, unknown> };
const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

/** The keys the schema allows in the mapping at `path`: what a misspelt key could have been. */
function fieldsAt(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] {
  let at = expand(defOf(schema));
  for (const part of path) {
    at = at.flatMap((d) => {
      const next = d.type === 'object' ? d.shape?.[String(part)] : d.type === 'array' ? d.element : d.type === 'record' ? d.valueType : undefined;
      return next === undefined ? [] : expand(defOf(next));
    });
  }
  return [...new Set(at.flatMap((d) => (d.type === 'object' ? Object.keys(d.shape ?? {}) : [])))];
}

/** A schema past its wrappers (optional, default, pipe…), unions as their options. */
function expand(def: Def): Def[] {
  if (def.innerType !== undefined) return expand(defOf(def.innerType));
  // A transform's pipe has the schema in front, a preprocess's behind.
  if (def.type === 'pipe') return [def.in, def.out].flatMap((s) => (s === undefined ? [] : expand(defOf(s))));
  if (def.type === 'union') return (def.options ?? []).flatMap((o) => expand(defOf(o)));
  if (def.type === 'intersection' && def.left !== undefined && def.right !== undefined) return [...expand(defOf(def.left)), ...expand(defOf(def.right))];
  return [def];
}
