/**
 * Hook `when` conditions: CEL, compiled and checked once when the file that holds them loads,
 * then evaluated on every event. The library is @marcbachmann/cel-js (no dependencies, about ten
 * times faster than @bufbuild/cel here, and it type-checks at load; see the hooks bench). Kiwi's
 * `and`/`or`/`not` are translated first (./kiwi-operators.ts).
 *
 * Bounded at load: source size, tree size and depth, literal sizes, and comprehension nesting,
 * so a condition costs at most about (tree nodes) × L^nesting steps for L the longest list in the
 * event. The library has no run-time budget, and L is the caller's, so each evaluation is also
 * priced before it runs (./condition-cost.ts) and refused over `maxEvaluationSteps`. Evaluation
 * never throws: an error, a refusal or a result that is not a boolean comes back as
 * `{ ok: false, reason }`, which the caller treats as the hook failing (closed).
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { KiwiError } from '../base/errors.js';
import { didYouMeanSuffix } from '../base/did-you-mean.js';
import { textHead } from '../base/text-cut.js';
import { checkConditionTree } from './condition-ast.js';
import { conditionCost, conditionShape, type ConditionShape } from './condition-cost.js';
import { HOOK_EVENT_FIELDS, type HookEvent } from './hook-event.js';
import { sourceOffset, translateKiwiOperators, type OperatorTranslation } from './kiwi-operators.js';

export interface ConditionLimits {
  /** UTF-8 bytes of the condition as written. */
  maxSourceBytes: number;
  maxAstNodes: number;
  /** Nesting of parentheses, calls and field selections. */
  maxDepth: number;
  maxListElements: number;
  maxMapEntries: number;
  /** all/exists/exists_one/map/filter inside another's body. */
  maxComprehensionNesting: number;
  /** The estimated steps one evaluation may take (./condition-cost.ts); about 10 ms here. */
  maxEvaluationSteps: number;
}

export const DEFAULT_CONDITION_LIMITS: Readonly<ConditionLimits> = Object.freeze({
  maxSourceBytes: 4096,
  maxAstNodes: 512,
  maxDepth: 32,
  maxListElements: 64,
  maxMapEntries: 64,
  maxComprehensionNesting: 2,
  maxEvaluationSteps: 1_000_000,
});

/** Where a condition was written: `line` (1-based) and `column` (1-based, default 1) of its first character. */
export interface ConditionSite {
  file: string;
  line: number;
  column?: number;
}

export type ConditionResult = { ok: true; matched: boolean } | { ok: false; reason: string };

export interface CompiledCondition {
  /** As written in the file. */
  readonly source: string;
  /** What the CEL library runs (`and`/`or`/`not` translated). */
  readonly cel: string;
  readonly site: ConditionSite;
  evaluate(event: HookEvent): ConditionResult;
}

export interface ConditionCompiler {
  /** Throws KiwiError INVALID_INPUT naming the file, line and column and what is wrong. */
  compileCondition(source: string, site: ConditionSite): CompiledCondition;
}

const MATCHED: ConditionResult = Object.freeze({ ok: true, matched: true });
const NOT_MATCHED: ConditionResult = Object.freeze({ ok: true, matched: false });

export function createConditionCompiler(options: Partial<ConditionLimits> = {}): ConditionCompiler {
  const limits: ConditionLimits = { ...DEFAULT_CONDITION_LIMITS, ...options };
  const env = new Environment({
    limits: {
      maxAstNodes: limits.maxAstNodes,
      maxDepth: limits.maxDepth,
      maxListElements: limits.maxListElements,
      maxMapEntries: limits.maxMapEntries,
      maxCallArguments: 8,
    },
  });
  for (const field of HOOK_EVENT_FIELDS) env.registerVariable(field, 'map');

  return {
    compileCondition(source, site) {
      const invalid = (offset: number, text: string) =>
        new KiwiError('INVALID_INPUT', `${position(site, source, offset)}: hook condition ${quote(source)}: ${text}`, {
          details: { file: site.file, line: lineOf(site, source, offset) },
        });
      if (source.trim() === '') throw invalid(0, 'is empty; write a CEL expression that is true or false');
      const bytes = Buffer.byteLength(source, 'utf8');
      if (bytes > limits.maxSourceBytes) {
        throw invalid(0, `is ${bytes} bytes, more than the ${limits.maxSourceBytes} allowed; split it into smaller hooks`);
      }

      const translation = translateKiwiOperators(source);
      const fromCel = (celOffset: number) => sourceOffset(translation, celOffset);
      let program: ParseResult;
      try {
        program = env.parse(translation.cel);
      } catch (error) {
        throw invalid(fromCel(errorOffset(error)), celMessage(error));
      }
      const notOffsets = new Set(translation.edits.filter((e) => e.word === 'not').map((e) => e.celOffset));
      const [problem] = checkConditionTree(program.ast, limits, notOffsets);
      if (problem) throw invalid(fromCel(problem.celOffset), problem.text);
      const checked = program.check();
      if (!checked.valid) throw invalid(fromCel(errorOffset(checked.error)), celMessage(checked.error));
      if (checked.type !== 'bool' && checked.type !== 'dyn') {
        throw invalid(0, `gives a ${checked.type}, not true or false; compare it with something (\`==\`, \`>\`, \`in\`, …)`);
      }
      return compiled(source, translation, site, program, conditionShape(program.ast), limits.maxEvaluationSteps);
    },
  };
}

function compiled(source: string, translation: OperatorTranslation, site: ConditionSite, program: ParseResult, shape: ConditionShape, maxSteps: number): CompiledCondition {
  const failed = (text: string, celOffset: number): ConditionResult => ({
    ok: false,
    reason: `${position(site, source, sourceOffset(translation, celOffset))}: hook condition ${quote(source)} failed: ${text}`,
  });
  return {
    source,
    cel: translation.cel,
    site,
    evaluate(event) {
      const cost = conditionCost(shape, event);
      if (cost.steps > maxSteps) {
        const where = cost.at === undefined ? `ranges of up to ${cost.range} elements` : `\`${cost.at}\` (a ${cost.what} of ${cost.size} ${cost.what === 'string' ? 'characters' : cost.what === 'map' ? 'entries' : 'items'})`;
        const loops = shape.nesting === 1 ? 'a comprehension' : `comprehensions nested ${shape.nesting} deep`;
        return failed(
          `not evaluated: with ${loops} over ${where}, it would take about ${Math.round(cost.steps).toLocaleString('en-US')} steps, more than the ${maxSteps.toLocaleString('en-US')} a condition may take`,
          0,
        );
      }
      let value: unknown;
      try {
        value = program(event);
      } catch (error) {
        return failed(celMessage(error), errorOffset(error));
      }
      if (value === true) return MATCHED;
      if (value === false) return NOT_MATCHED;
      return failed(`gave ${describe(value)}, not true or false`, 0);
    },
  };
}

/** The library's one-line summary, with a hint where the usual cause is a misspelt variable. */
function celMessage(error: unknown): string {
  const summary = (error as { summary?: unknown } | undefined)?.summary;
  const text = typeof summary === 'string' ? summary : error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
  const unknown = /^Unknown variable: (\S+)/.exec(text);
  if (unknown) {
    return `${text}${didYouMeanSuffix(unknown[1] as string, HOOK_EVENT_FIELDS)}; a condition sees ${HOOK_EVENT_FIELDS.join(', ')}`;
  }
  return text;
}

function errorOffset(error: unknown): number {
  const start = (error as { range?: { start?: unknown } } | undefined)?.range?.start;
  return typeof start === 'number' && start >= 0 ? start : 0;
}

function lineOf(site: ConditionSite, source: string, offset: number): number {
  let line = site.line;
  for (let i = source.indexOf('\n'); i !== -1 && i < offset; i = source.indexOf('\n', i + 1)) line += 1;
  return line;
}

/** `file:line:column` of a character of the condition. */
function position(site: ConditionSite, source: string, offset: number): string {
  const at = Math.min(Math.max(offset, 0), source.length);
  const lineStart = source.lastIndexOf('\n', at - 1) + 1;
  const column = lineStart === 0 ? (site.column ?? 1) + at : at - lineStart + 1;
  return `${site.file}:${lineOf(site, source, at)}:${column}`;
}

function quote(source: string): string {
  return JSON.stringify(source.length > 80 ? `${textHead(source, 77)}...` : source);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'bigint') return `the int ${value}`;
  if (typeof value === 'number') return `the double ${value}`;
  if (typeof value === 'string') return `a string ${quote(value)}`;
  return typeof value === 'object' ? 'a map' : `a ${typeof value}`;
}
