/**
 * What runs for one intent: the intent itself, or its steps in order (split-steps.ts). A step cut
 * at a plain "and" is kept only when every piece of its clause resolves on its own, each to a
 * different tool or with the same first word ("read a.txt and read b.txt"); otherwise the clause
 * stays one step. Those pieces are resolved here, and their resolutions travel with the plan so
 * that they are not resolved twice.
 */
import { splitSteps, type SplitOptions, type Step } from './split-steps.js';
import type { Resolution } from './types.js';

export interface PlannedStep {
  text: string;
  /** Resolved while planning (a piece of a clause cut at "and"); absent: resolve it when its turn comes. */
  resolution?: Resolution;
}

export type StepPlan =
  /** Not a sequence: resolve and run the intent as written, as if it had never been looked at. */
  | { kind: 'single' }
  /** Nothing runs; `reason` says what to write instead. */
  | { kind: 'refused'; reason: string }
  | { kind: 'steps'; steps: PlannedStep[] };

export async function planSteps(intent: string, resolve: (text: string) => Promise<Resolution>, options: SplitOptions = {}): Promise<StepPlan> {
  const split = splitSteps(intent, options);
  if (split.kind === 'single') return split;
  if (split.kind === 'too-many') return { kind: 'refused', reason: split.reason };
  const steps: PlannedStep[] = [];
  for (const clause of clauses(split.steps)) {
    if (clause.length === 1) {
      steps.push({ text: (clause[0] as Step).text });
      continue;
    }
    const resolutions: Resolution[] = [];
    for (const piece of clause) resolutions.push(await resolve(piece.text));
    if (standsAlone(clause, resolutions)) clause.forEach((piece, i) => steps.push({ text: piece.text, resolution: resolutions[i] as Resolution }));
    else steps.push({ text: (clause[0] as Step).clause });
  }
  return steps.length < 2 ? { kind: 'single' } : { kind: 'steps', steps };
}

export interface StepRunner {
  /** Resolves the step (unless the plan did) and runs it: true when it succeeded. */
  run(step: PlannedStep, i: number): Promise<boolean>;
  /** Told of each step `i` after step `failed` (0-based), which did not succeed: it does not run. */
  notRun(step: PlannedStep, i: number, failed: number): void;
  /** Asked before each step: true ends the steps there, telling no one (the request was cancelled). */
  cancelled?: () => boolean;
}

/**
 * The steps of a plan, in order: the first that does not succeed stops the rest. The agent loop
 * and the MCP `resolve` tool both take steps this way; true when every step succeeded.
 */
export async function runPlannedSteps(steps: readonly PlannedStep[], runner: StepRunner): Promise<boolean> {
  for (const [i, step] of steps.entries()) {
    if (runner.cancelled?.()) return false;
    if (await runner.run(step, i)) continue;
    for (let later = i + 1; later < steps.length; later++) runner.notRun(steps[later] as PlannedStep, later, i);
    return false;
  }
  return true;
}

/** The steps grouped by the clause they were cut from. */
function clauses(steps: readonly Step[]): Step[][] {
  const groups: Step[][] = [];
  for (const step of steps) {
    const last = groups.at(-1);
    if (step.weak && last) last.push(step);
    else groups.push([step]);
  }
  return groups;
}

function standsAlone(pieces: readonly Step[], resolutions: readonly Resolution[]): boolean {
  return resolutions.every((r, i) => {
    if (r.status !== 'resolved') return false;
    const before = resolutions[i - 1];
    if (before?.status !== 'resolved' || before.call.tool !== r.call.tool) return true;
    return firstWord((pieces[i - 1] as Step).text) === firstWord((pieces[i] as Step).text);
  });
}

function firstWord(text: string): string | undefined {
  return /^[A-Za-z]+/.exec(text)?.[0]?.toLowerCase();
}
