/**
 * Call accuracy as shared/bench/FORMAT.md defines it: the tool is right, every gold parameter's
 * value is one of its acceptable values (`""` among them: it may be left out), and no argument
 * lies outside the tool's schema. Values compare after JSON normalisation: numbers by value,
 * strings exactly after trimming, arrays and objects structurally.
 *
 * Datasets converted from other formats often write every value as a string ("19.0" for a
 * number parameter) while a filler that honours the schema answers 19; a number and a string
 * that spells a number therefore compare by value, and `true` matches "true"/"True".
 */

export interface GoldCall {
  name: string;
  /** Parameter → acceptable values; null when the case checks only the tool's name. */
  arguments: Readonly<Record<string, readonly unknown[]>> | null;
}

export interface PredictedCall {
  tool: string;
  arguments: Readonly<Record<string, unknown>>;
}

export interface CallMatchOptions {
  /**
   * The gold tool's parameter names. With them, an argument outside the schema fails the call;
   * without them that rule cannot be checked and is skipped.
   */
  schema?: Iterable<string>;
}

export function callMatches(gold: GoldCall, predicted: PredictedCall, options: CallMatchOptions = {}): boolean {
  if (predicted.tool !== gold.name) return false;
  if (options.schema !== undefined) {
    const names = new Set(options.schema);
    for (const key of Object.keys(predicted.arguments)) if (!names.has(key)) return false;
  }
  if (gold.arguments === null) return true;
  for (const [name, acceptable] of Object.entries(gold.arguments)) {
    if (!argumentMatches(acceptable, predicted.arguments, name)) return false;
  }
  return true;
}

/** One gold parameter against the predicted arguments: absent is right only when `""` is acceptable. */
export function argumentMatches(acceptable: readonly unknown[], args: Readonly<Record<string, unknown>>, name: string): boolean {
  const present = Object.hasOwn(args, name) && args[name] !== undefined;
  if (!present) return acceptable.some((v) => v === '');
  return acceptable.some((v) => valueMatches(v, args[name]));
}

/** One gold value against one predicted value, by FORMAT.md's normalisation. */
export function valueMatches(expected: unknown, actual: unknown): boolean {
  return same(expected, actual, 0);
}

const MAX_DEPTH = 64;
const NUMERIC = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function same(a: unknown, b: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  if (typeof a === 'string' && typeof b === 'string') return a.trim() === b.trim();
  if (typeof a === 'number' || typeof b === 'number') {
    const x = asNumber(a);
    const y = asNumber(b);
    return x !== undefined && y !== undefined && x === y;
  }
  if (typeof a === 'boolean' || typeof b === 'boolean') {
    const x = asBoolean(a);
    const y = asBoolean(b);
    return x !== undefined && x === y;
  }
  if (a === null || b === null) return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => same(v, b[i], depth + 1));
  }
  if (typeof a === 'object' && typeof b === 'object') {
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    const ka = Object.keys(ra).filter((k) => ra[k] !== undefined);
    const kb = Object.keys(rb).filter((k) => rb[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.hasOwn(rb, k) && same(ra[k], rb[k], depth + 1));
  }
  return false;
}

function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && NUMERIC.test(v.trim())) return Number(v.trim());
  return undefined;
}

function asBoolean(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    if (t === 'true') return true;
    if (t === 'false') return false;
  }
  return undefined;
}
