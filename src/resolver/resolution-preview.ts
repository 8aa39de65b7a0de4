/**
 * What the gateway would do with an intent, with nothing run: the steps it splits into (as the
 * agent loop and the MCP `resolve` tool split them, step-plan.ts), each step's resolution, and
 * the decision that resolution makes. For people tuning a catalog or the resolver's settings
 * (the admin API's playground): the resolver is asked exactly as a chat asks it.
 */
import type { SplitOptions } from './split-steps.js';
import { planSteps } from './step-plan.js';
import type { Resolution } from './types.js';

/**
 * `resolved`: the call would go to the tool proxy. `asked_back`: a tool fits, and the agent is
 * asked for the values the intent lacks, or to write the call exactly (below the gate).
 * `unresolved`: nothing fits well enough; the agent gets the reason and the closest tools.
 */
export type PreviewDecision = 'resolved' | 'asked_back' | 'unresolved';

export interface PreviewStep {
  intent: string;
  resolution: Resolution;
  decision: PreviewDecision;
}

export type ResolutionPreview =
  /** The intent is refused before any resolution (too many steps); nothing would run. */
  | { kind: 'refused'; reason: string }
  /** One intent (`single`), or its steps in order, of which the first not resolved stops the rest. */
  | { kind: 'single' | 'steps'; steps: PreviewStep[] };

export async function previewResolution(intent: string, resolve: (text: string) => Promise<Resolution>, options: SplitOptions = {}): Promise<ResolutionPreview> {
  const plan = await planSteps(intent, resolve, options);
  if (plan.kind === 'refused') return plan;
  if (plan.kind === 'single') return { kind: 'single', steps: [step(intent, await resolve(intent))] };
  // Every step is shown, even past one that would stop the sequence: nothing runs here.
  const steps: PreviewStep[] = [];
  for (const planned of plan.steps) steps.push(step(planned.text, planned.resolution ?? (await resolve(planned.text))));
  return { kind: 'steps', steps };
}

export function decisionOf(resolution: Resolution): PreviewDecision {
  if (resolution.status === 'resolved') return 'resolved';
  const { stop } = resolution;
  // An exact call that names a tool but lacks values is asked for them like any other.
  return stop === 'arguments' || stop === 'gate' || (stop === 'exact_call' && resolution.missing.length > 0) ? 'asked_back' : 'unresolved';
}

function step(intent: string, resolution: Resolution): PreviewStep {
  return { intent, resolution, decision: decisionOf(resolution) };
}
