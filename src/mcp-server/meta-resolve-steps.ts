/**
 * The `resolve` meta-tool for an intent written as ordered steps: each step is resolved and run
 * in turn through the tool proxy, exactly as a one-step intent would be (meta-resolve.ts), and
 * the first step that does not succeed (unresolved, denied, failed, or a result the tool marked
 * as an error) stops the rest. The answer lists every step: what ran, with its result, and what
 * did not, and why.
 */
import { runPlannedSteps, type PlannedStep } from '../resolver/step-plan.js';
import type { Resolution } from '../resolver/types.js';
import type { MetaResult } from './meta-common.js';

export interface StepRunDeps {
  resolve(text: string): Promise<Resolution>;
  /** What a one-step intent with this resolution answers (and runs, unless `execute: false`). */
  run(resolution: Resolution): Promise<MetaResult>;
}

export async function runSteps(steps: readonly PlannedStep[], deps: StepRunDeps): Promise<MetaResult> {
  const texts: string[] = [];
  const views: Array<Record<string, unknown>> = [];
  const head = (step: PlannedStep, i: number): string => `step ${i + 1} of ${steps.length}: ${step.text}`;
  let callFailed = false;
  const done = await runPlannedSteps(steps, {
    async run(step, i) {
      const resolution = step.resolution ?? (await deps.resolve(step.text));
      const result = await deps.run(resolution);
      callFailed = resolution.status === 'resolved' && result.isError === true;
      texts.push(`${head(step, i)}\n${result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n')}`);
      views.push({ step: i + 1, intent: step.text, ...(result.structuredContent ?? {}) });
      return resolution.status === 'resolved' && !callFailed;
    },
    notRun(step, i) {
      texts.push(`${head(step, i)}\nnot run: it comes after a step that did not succeed`);
      views.push({ step: i + 1, intent: step.text, status: 'not_run' });
    },
  });
  const stopped = !done;
  const lead = stopped
    ? `this intent has ${steps.length} steps, taken in order; it stopped at a step that did not succeed, and the later ones did not run: sort that step out, then send the rest again`
    : `this intent has ${steps.length} steps, taken in order`;
  return {
    content: [{ type: 'text', text: [lead, ...texts].join('\n\n') }],
    structuredContent: { status: stopped ? 'stopped' : 'done', steps: views },
    ...(callFailed ? { isError: true } : {}),
  };
}
