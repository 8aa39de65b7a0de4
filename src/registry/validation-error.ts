import type { RegistryIssue } from './types.js';

/** What every registry parser returns: the item (with what of it is not honoured), or every problem found in the file. */
export type ParseResult<T> = { ok: true; value: T; warnings?: RegistryIssue[] } | { ok: false; issues: RegistryIssue[] };

export type ItemKind = RegistryIssue['kind'];

/** Where an item came from: the absolute path, and the path people recognise (`.ai/tools/x.yaml`). */
export interface FileLabel {
  file: string;
  display: string;
}

export interface IssueInput {
  field?: string;
  line?: number;
  column?: number;
  /** What is wrong and what to write instead; the file and field are prefixed here. */
  text: string;
}

/** Builds an issue whose message stands on its own: `file:line:col: field: text`. */
export function makeIssue(kind: ItemKind, label: FileLabel, input: IssueInput): RegistryIssue {
  const where = input.line === undefined ? label.display : `${label.display}:${input.line}:${input.column ?? 1}`;
  const field = input.field === undefined || input.field === '' ? '' : `${input.field}: `;
  const issue: RegistryIssue = { file: label.file, message: `${where}: ${field}${input.text}`, kind };
  if (input.field !== undefined && input.field !== '') issue.field = input.field;
  if (input.line !== undefined) issue.line = input.line;
  if (input.column !== undefined) issue.column = input.column;
  return issue;
}

export function fail<T>(issues: RegistryIssue[]): ParseResult<T> {
  return { ok: false, issues };
}

/** `['parameters', 1, 'type']` → `parameters[1].type`. */
export function formatFieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** A short rendering of a YAML/XML value for messages: strings quoted, long values cut. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** The first line of a parser's message, without the position it repeats. */
export function firstLine(message: string): string {
  const line = message.split('\n')[0] ?? message;
  return line.replace(/ at line \d+, column \d+:?\s*$/, '').trim();
}
