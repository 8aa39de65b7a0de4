/**
 * The cost bound on one evaluation of a hook condition. The CEL library bounds only the parsed
 * tree, never the run, and a comprehension nested in another over a list the caller sent costs
 * L² steps: a 4,000-item argument list held the event loop for 6.4 s. So each evaluation is
 * priced before it runs, from the condition's shape (known at load) and the sizes in the event
 * (known now), and a condition over the budget is not run at all: it fails, and the hook fails
 * closed, saying which field was too long.
 *
 * The price is `tree nodes × R^nesting`, where R is the longest range a comprehension could
 * walk: the longest list or map in the event fields the condition reads (and, when it calls
 * `split`, the longest string there, since splitting makes a list of it), or its longest list
 * literal, times one more than its `+` count (a `+` may join lists). One such step measured
 * about 10 ns here; the natives inside a step (`in`, `contains`, joining lists) are about a
 * hundred times cheaper per element than the interpreted steps, so one more factor of L from
 * them stays within the same order while R is as small as the budget lets it be.
 */
import type { ASTNode } from '@marcbachmann/cel-js';
import { childrenOf, COMPREHENSIONS } from './condition-ast.js';
import { HOOK_EVENT_FIELDS, type HookEvent, type HookEventField } from './hook-event.js';

/** What the price of a condition depends on, read from its tree once at load. */
export interface ConditionShape {
  nodes: number;
  /** How deeply comprehensions nest: 0 without any, 1 for one, 2 for one inside another's body. */
  nesting: number;
  /** The event fields the condition names. */
  reads: readonly HookEventField[];
  /** Calls `split`, which turns a string into a list as long as the string. */
  splits: boolean;
  /** Count of `+`, each of which may join two lists into a longer one. */
  pluses: number;
  /** Elements of its longest list literal (or entries of its largest map literal). */
  literal: number;
}

export interface ConditionCost {
  /** The estimated steps. */
  steps: number;
  /** The longest range (R). */
  range: number;
  /** The longest value in the event that R comes from (`arguments.items`), when it does: where, what, and its length. */
  at?: string;
  what?: 'list' | 'map' | 'string';
  size?: number;
}

const EVENT_FIELDS: ReadonlySet<string> = new Set(HOOK_EVENT_FIELDS);

export function conditionShape(root: ASTNode): ConditionShape {
  let nodes = 0;
  let splits = false;
  let pluses = 0;
  let literal = 0;
  const reads = new Set<HookEventField>();
  // Answers how deeply comprehensions nest at and below `node` (1 for one without another in its body).
  const visit = (node: ASTNode): number => {
    nodes += 1;
    if (node.op === 'id' && EVENT_FIELDS.has(node.args)) reads.add(node.args as HookEventField);
    if ((node.op === 'call' || node.op === 'rcall') && node.args[0] === 'split') splits = true;
    if (node.op === '+') pluses += 1;
    if (node.op === 'list' || node.op === 'map') literal = Math.max(literal, node.args.length);
    if (node.op === 'rcall' && COMPREHENSIONS.has(node.args[0])) {
      const [, receiver, args] = node.args;
      return Math.max(visit(receiver), 1 + Math.max(0, ...args.map(visit)));
    }
    return Math.max(0, ...childrenOf(node).map(visit));
  };
  const nesting = visit(root);
  return { nodes, nesting, reads: [...reads], splits, pluses, literal };
}

/** The price of evaluating a condition of this shape on this event. */
export function conditionCost(shape: ConditionShape, event: HookEvent): ConditionCost {
  if (shape.nesting === 0) return { steps: shape.nodes, range: 0 };
  const longest = longestIn(event, shape.reads, shape.splits);
  const base = Math.max(longest.size, shape.literal, 1);
  const range = base * (1 + shape.pluses);
  const steps = shape.nodes * range ** shape.nesting;
  return longest.size >= shape.literal && longest.at !== undefined ? { steps, range, at: longest.at, what: longest.what, size: longest.size } : { steps, range };
}

interface Longest {
  size: number;
  at?: string;
  what?: 'list' | 'map' | 'string';
}

/** The longest list, map (and string, when `strings`) in the named fields, walked without recursion. */
function longestIn(event: HookEvent, fields: readonly HookEventField[], strings: boolean): Longest {
  let best: Longest = { size: 0 };
  // Where a value is, built only for the longest one found so far (a long list holds many values).
  interface Item { value: unknown; parent?: Item; key: string | number }
  const pathOf = (item: Item): string => {
    let path = '';
    let at: Item | undefined = item;
    for (; at?.parent !== undefined; at = at.parent) {
      const k = at.key;
      path = (typeof k === 'number' ? `[${k}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`) + path;
    }
    return `${String(at?.key)}${path}`;
  };
  const consider = (size: number, item: Item, what: NonNullable<Longest['what']>): void => {
    if (size > best.size) best = { size, at: pathOf(item), what };
  };
  const stack: Item[] = fields.map((f) => ({ value: event[f], key: f }));
  const seen = new Set<object>();
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const value = item.value;
    if (typeof value === 'string') {
      // `split("")` makes one element per character.
      if (strings) consider(value.length + 1, item, 'string');
      continue;
    }
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    if (Array.isArray(value)) {
      consider(value.length, item, 'list');
      for (const [i, v] of value.entries()) stack.push({ value: v, parent: item, key: i });
    } else {
      const entries = Object.entries(value);
      consider(entries.length, item, 'map');
      for (const [k, v] of entries) stack.push({ value: v, parent: item, key: k });
    }
  }
  return best;
}
