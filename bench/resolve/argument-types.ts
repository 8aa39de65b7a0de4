/**
 * Argument accuracy by the kind of parameter, to see which kinds the filler gets wrong: for every
 * resolved call whose tool is right (cases with one gold call and gold arguments), the share of
 * gold parameters of each kind whose value is acceptable by FORMAT.md's rule.
 */
import type { ToolParameter } from '../../src/registry/types.js';
import { argumentMatches } from '../../src/resolver/score-call.js';
import { round } from '../stats.js';
import type { ImportedCatalog } from '../../src/datasets/catalog-file.js';
import type { CaseResult } from './metrics.js';

export const ARGUMENT_KINDS = ['string', 'number', 'enum', 'boolean', 'array', 'date', 'object'] as const;
/** `unknown`: a gold parameter the tool's schema does not have (a data error, counted apart). */
export type ArgumentKind = (typeof ARGUMENT_KINDS)[number] | 'unknown';

export interface KindAccuracy {
  n: number;
  accuracy: number | null;
}

export type ArgumentTypeReport = Record<ArgumentKind | 'all', KindAccuracy>;

/** Each tool's parameters by catalog name. */
export type Parameters = ReadonlyMap<string, readonly ToolParameter[]>;

export function catalogParameters(catalog: ImportedCatalog): Parameters {
  return new Map(catalog.tools.map((t) => [catalog.names.get(t.id) ?? t.id, t.parameters]));
}

const MONTH = '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';

const DATE_LIKE = [
  /^\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/,
  /^\d{4}-\d{1,2}$/,
  /^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}$/,
  /^\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?$/i,
  // A month by name with a day or a year: "March 5, 2024", "5 Mar 2024", "June 2023".
  new RegExp(`^(?=.*\\d)(?:\\d{1,2}(?:st|nd|rd|th)?\\s+)?${MONTH}\\.?(?:\\s+\\d{1,2}(?:st|nd|rd|th)?)?,?(?:\\s+\\d{4})?$`, 'i'),
];

/**
 * A parameter's kind: `enum` when the schema lists its values, whatever their type; `date` for a
 * string parameter whose format says so or whose gold value reads as a date or time (many
 * catalogs type dates as plain strings); otherwise the schema type, numbers and integers together.
 */
export function argumentKind(param: ToolParameter | undefined, acceptable: readonly unknown[]): ArgumentKind {
  if (!param) return 'unknown';
  if (param.enum !== undefined) return 'enum';
  switch (param.type) {
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
    case 'array':
    case 'object':
      return param.type;
    case 'string':
    case 'any': {
      // A value of any type is counted by what it is: catalogs write `any` for plain text most of all.
      const value = acceptable.find((v) => v !== '');
      if (param.type === 'any' && typeof value !== 'string') return 'unknown';
      return param.format === 'date' || param.format === 'date-time' || param.format === 'time' || (typeof value === 'string' && DATE_LIKE.some((re) => re.test(value.trim()))) ? 'date' : 'string';
    }
  }
}

export function argumentTypes(results: readonly CaseResult[], parameters: Parameters): ArgumentTypeReport {
  const counts = new Map<ArgumentKind | 'all', { n: number; right: number }>();
  const bump = (kind: ArgumentKind | 'all', right: boolean) => {
    const c = counts.get(kind) ?? { n: 0, right: 0 };
    c.n++;
    if (right) c.right++;
    counts.set(kind, c);
  };
  for (const r of results) {
    const gold = r.case.calls.length === 1 ? r.case.calls[0] : undefined;
    if (!gold?.arguments || r.resolution.status !== 'resolved' || r.resolution.call.tool !== gold.name) continue;
    const params = parameters.get(gold.name) ?? [];
    for (const [name, acceptable] of Object.entries(gold.arguments)) {
      const right = argumentMatches(acceptable, r.resolution.call.arguments, name);
      bump(argumentKind(params.find((p) => p.name === name), acceptable), right);
      bump('all', right);
    }
  }
  const out = {} as ArgumentTypeReport;
  for (const kind of [...ARGUMENT_KINDS, 'unknown', 'all'] as const) {
    const c = counts.get(kind);
    if (kind === 'unknown' && !c) continue;
    out[kind] = { n: c?.n ?? 0, accuracy: c ? round(c.right / c.n) : null };
  }
  return out;
}
