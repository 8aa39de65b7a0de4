/**
 * Load-time checks over the CEL library's parsed tree that the library does not make itself:
 * how deeply comprehensions nest (the static bound on a condition's cost), functions a hook may
 * not call, and a `not` whose CEL precedence differs from what the author meant.
 */
import type { ASTNode } from '@marcbachmann/cel-js';

/** A problem found in the tree, at an offset of the CEL text. */
export interface TreeProblem {
  celOffset: number;
  text: string;
}

/** The macros that loop over a list or map; one nested in another's body multiplies the work. */
export const COMPREHENSIONS: ReadonlySet<string> = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/**
 * `matches` runs the library's JavaScript RegExp, which backtracks: one pattern and a crafted
 * 30-character string took 15 s here. Conditions read text the agent and its tools wrote.
 */
const FORBIDDEN_CALLS: Record<string, string> = {
  matches:
    '`matches` is not available in hook conditions: the CEL library runs it on a backtracking regular-expression engine that a crafted input can stall; use contains, startsWith, endsWith or `in`',
};

/** Operators that bind tighter than Kiwi's `not` but looser than CEL's `!`. */
const PRECEDENCE_TRAPS = new Set(['==', '!=', '<', '<=', '>', '>=', 'in', '+', '-', '*', '/', '%']);

export interface TreeLimits {
  maxComprehensionNesting: number;
}

/**
 * Every problem in the tree. `notOffsets` are the CEL offsets of the `!` that stand for a
 * written `not`: `not a == b` means `not (a == b)` to its author, but `(!a) == b` to CEL.
 */
export function checkConditionTree(root: ASTNode, limits: TreeLimits, notOffsets: ReadonlySet<number>): TreeProblem[] {
  const problems: TreeProblem[] = [];
  const visit = (node: ASTNode): number => {
    const children = childrenOf(node);
    if (node.op === 'call' || node.op === 'rcall') {
      const forbidden = FORBIDDEN_CALLS[node.args[0]];
      if (forbidden !== undefined) problems.push({ celOffset: node.pos, text: forbidden });
    }
    if (PRECEDENCE_TRAPS.has(node.op)) {
      const left = children[0];
      if (left?.op === '!_' && notOffsets.has(left.start)) {
        problems.push({
          celOffset: left.start,
          text: `\`not\` here applies only to the operand before \`${node.op}\` (CEL's \`!\` binds tighter than comparisons); write \`not (…)\` around what it negates`,
        });
      }
    }
    if (node.op === 'rcall' && COMPREHENSIONS.has(node.args[0])) {
      const [, receiver, args] = node.args;
      const body = Math.max(0, ...args.map(visit));
      const nesting = Math.max(visit(receiver), 1 + body);
      if (nesting > limits.maxComprehensionNesting && body === limits.maxComprehensionNesting) {
        problems.push({
          celOffset: node.pos,
          text: `comprehensions (all, exists, exists_one, map, filter) nest ${nesting} deep here; at most ${limits.maxComprehensionNesting} may, so that a condition's cost stays bounded`,
        });
      }
      return nesting;
    }
    return Math.max(0, ...children.map(visit));
  };
  visit(root);
  return problems;
}

export function childrenOf(node: ASTNode): ASTNode[] {
  switch (node.op) {
    case 'value':
    case 'id':
      return [];
    case '.':
    case '.?':
      return [node.args[0]];
    case 'call':
      return node.args[1];
    case 'rcall':
      return [node.args[1], ...node.args[2]];
    case 'list':
      return node.args;
    case 'map':
      return node.args.flat();
    case '!_':
    case '-_':
      return [node.args];
    default:
      return [...node.args];
  }
}
