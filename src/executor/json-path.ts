import { KiwiError } from '../base/errors.js';
import { isPlainObject } from '../base/plain-object.js';

/**
 * The JSONPath subset Kiwi's `response_transform: "$.a.b[0:7]"` needs, parsed by hand: names
 * (`.a`, `['a']`), indexes (`[0]`, `[-1]`), slices (`[0:7]`, `[::2]`) and wildcards (`.*`, `[*]`).
 * Filters, scripts, unions and recursive descent are refused: the npm libraries that support them
 * evaluate expressions, which a manifest must never make the gateway do.
 */
export type PathStep =
  | { kind: 'name'; name: string }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start?: number; end?: number; step: number }
  | { kind: 'wildcard' };

const MAX_PATH_CHARS = 512;
const NAME = /^[A-Za-z_$][A-Za-z0-9_$-]*/;
const INT = '(-?\\d+)?';
const SLICE = new RegExp(`^${INT}:${INT}(?::${INT})?$`);

export function parseJsonPath(path: string): PathStep[] {
  const bad = (why: string) =>
    new KiwiError('CHAIN_INVALID', `response_transform: "${path.slice(0, 80)}" ${why}; the gateway reads JSONPath of the form $.a.b[0].c, $.items[*].name or $.list[0:7] (no filters, unions or ..)`);
  if (path.length > MAX_PATH_CHARS) throw bad(`is longer than ${MAX_PATH_CHARS} characters`);
  if (!path.startsWith('$')) throw bad('does not start with $');
  const steps: PathStep[] = [];
  let rest = path.slice(1);
  while (rest.length > 0) {
    if (rest.startsWith('..')) throw bad('uses recursive descent (..)');
    if (rest.startsWith('.*')) {
      steps.push({ kind: 'wildcard' });
      rest = rest.slice(2);
      continue;
    }
    if (rest.startsWith('.')) {
      const m = NAME.exec(rest.slice(1));
      if (!m) throw bad(`has no name after "." at "${rest.slice(0, 20)}"`);
      steps.push({ kind: 'name', name: m[0] });
      rest = rest.slice(1 + m[0].length);
      continue;
    }
    if (!rest.startsWith('[')) throw bad(`has "${rest.slice(0, 20)}" where . or [ was expected`);
    const close = rest.indexOf(']');
    if (close < 0) throw bad('has a [ without ]');
    steps.push(bracket(rest.slice(1, close).trim(), bad));
    rest = rest.slice(close + 1);
  }
  return steps;
}

function bracket(inner: string, bad: (why: string) => KiwiError): PathStep {
  if (inner === '*') return { kind: 'wildcard' };
  if (/^-?\d+$/.test(inner)) return { kind: 'index', index: Number(inner) };
  const quoted = /^'([^'\\]*)'$|^"([^"\\]*)"$/.exec(inner);
  if (quoted) return { kind: 'name', name: (quoted[1] ?? quoted[2]) as string };
  const slice = SLICE.exec(inner);
  if (slice) {
    const step = slice[3] === undefined ? 1 : Number(slice[3]);
    if (step <= 0) throw bad('has a slice step that is not positive');
    return {
      kind: 'slice',
      step,
      ...(slice[1] !== undefined ? { start: Number(slice[1]) } : {}),
      ...(slice[2] !== undefined ? { end: Number(slice[2]) } : {}),
    };
  }
  throw bad(`has [${inner.slice(0, 30)}], which is not an index, a slice, a quoted name or *`);
}

/**
 * Applies the path. A definite path (names and indexes only) gives the value or undefined; one with
 * a wildcard or a slice gives the list of every match, as JSONPath defines.
 */
export function queryJsonPath(value: unknown, steps: PathStep[]): unknown {
  let nodes: unknown[] = [value];
  for (const step of steps) nodes = nodes.flatMap((node) => apply(node, step));
  const definite = steps.every((s) => s.kind === 'name' || s.kind === 'index');
  return definite ? nodes[0] : nodes;
}

function apply(node: unknown, step: PathStep): unknown[] {
  if (step.kind === 'name') {
    if (!isPlainObject(node) || !Object.hasOwn(node, step.name)) return [];
    return [node[step.name]];
  }
  if (step.kind === 'wildcard') {
    if (Array.isArray(node)) return node;
    return isPlainObject(node) ? Object.values(node) : [];
  }
  if (!Array.isArray(node)) return [];
  if (step.kind === 'index') {
    const i = step.index < 0 ? node.length + step.index : step.index;
    return i >= 0 && i < node.length ? [node[i]] : [];
  }
  const at = (n: number | undefined, fallback: number) => (n === undefined ? fallback : n < 0 ? Math.max(0, node.length + n) : Math.min(n, node.length));
  const out: unknown[] = [];
  for (let i = at(step.start, 0); i < at(step.end, node.length); i += step.step) out.push(node[i]);
  return out;
}
