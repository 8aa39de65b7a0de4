import { isKiwiError } from '../base/errors.js';
import { validateArgs } from '../executor/validate-args.js';
import type { Tool } from '../registry/types.js';
import { fillArguments } from './fill-args.js';
import { calibrate, type ResolverModel } from './learned-model.js';
import type { ResolverFallback } from './model-fallback.js';
import type { Candidate, CompleteOptions, FallbackUse, Resolution } from './types.js';
import { valueEvidence } from './value-evidence.js';
import { setOwn } from '../base/plain-object.js';

/**
 * Where the rules stop short of a call (a value not found, or a call below the gate), the
 * fallback model may choose among the top candidates the caller may run and write the call. Its
 * answer is untrusted input, and runs only past the checks of a model's call: a function it was
 * shown, arguments that pass the tool's schema, and evidence in the text for every value it wrote
 * — a value the text does not hold is a guess, and refuses the call. Neither the retrieval's
 * threshold nor the calibrated gate is one of them: both measure how sure the rules are of their
 * own first pick, which is why the model was asked; a model that reads the intent may rightly
 * choose a lower-ranked candidate. The call's confidence is kept for the record. The policy then
 * decides, as for any call.
 */

export interface FallbackGround {
  fallback: ResolverFallback;
  model?: ResolverModel;
  /** The tool, directive or entry a candidate names, as a tool. */
  targetOf(candidate: Candidate): Tool | undefined;
}

export interface FallbackStop {
  intent: string;
  candidates: Candidate[];
  /** The retrieval's confidence in the first candidate. */
  confidence: number;
  options: CompleteOptions;
  finish(): Resolution['timings'];
  /** The rules' answer, returned (with what the model did) unless its call passes. */
  stopped: Resolution & { status: 'unresolved' };
}

export async function callFromFallback(g: FallbackGround, s: FallbackStop): Promise<Resolution> {
  const { fallback } = g;
  const { intent, candidates, confidence, options, stopped } = s;
  const { notes } = stopped;
  const name = `fallback model ${fallback.model}`;
  // A tool the caller may not run is never offered: the model could only pick a call the policy denies.
  const shown = candidates
    .filter((c) => options.mayCall?.(c) ?? true)
    .slice(0, fallback.candidates)
    .flatMap((c) => {
      const tool = g.targetOf(c);
      return tool ? [{ candidate: c, tool }] : [];
    });
  if (shown.length === 0) {
    notes.push(`${name} not asked: the caller may run none of the closest tools`);
    return stopped;
  }
  const context = options.context !== undefined ? { context: options.context } : {};
  const answer = await fallback.ask({ intent, tools: shown.map((x) => x.tool), ...context, ...(options.signal ? { signal: options.signal } : {}) });
  const use = (outcome: FallbackUse['outcome']): FallbackUse => ({ model: fallback.model, upstream: fallback.upstream, outcome, ...answer.cost });
  const settled = (outcome: FallbackUse['outcome']): Resolution => ({ ...stopped, timings: s.finish(), fallback: use(outcome) });
  if (answer.kind !== 'call') {
    notes.push(`${name}: ${answer.why}`);
    return settled(answer.kind);
  }
  const { tool } = answer;
  const refuse = (why: string): Resolution => {
    notes.push(`${name} called ${tool.id}; refused: ${why}`);
    return settled('refused');
  };
  const rank = shown.findIndex((x) => x.tool === tool);
  const chosen = shown[rank] as (typeof shown)[number];
  // The first candidate's confidence counts its lead; another's is its own score, with no lead.
  const toolConfidence = chosen.candidate === candidates[0] ? confidence : Math.max(0, Math.min(1, chosen.candidate.score));
  let checked: Record<string, unknown>;
  try {
    checked = validateArgs(tool, answer.arguments);
  } catch (error) {
    if (!isKiwiError(error, 'INVALID_INPUT')) throw error;
    return refuse(error.message);
  }
  // What the model wrote, and the required values validation defaulted; not every optional default.
  const args: Record<string, unknown> = {};
  for (const p of tool.parameters) {
    if (Object.hasOwn(checked, p.name) && (Object.hasOwn(answer.arguments, p.name) || p.required)) setOwn(args, p.name, checked[p.name]);
  }
  const rules = fillArguments(intent, tool, context).arguments;
  let weakest = 1;
  for (const p of tool.parameters) {
    if (!Object.hasOwn(args, p.name)) continue;
    const evidence = valueEvidence(args[p.name], p, { intent, ...context }, Object.hasOwn(rules, p.name) ? rules[p.name] : undefined);
    if (evidence.score === 0) return refuse(`${p.name}: ${evidence.how}`);
    weakest = Math.min(weakest, evidence.score);
    notes.push(`${p.name}: ${evidence.how} (${name})`);
  }
  const raw = toolConfidence * weakest;
  const callConfidence = g.model ? calibrate(g.model, raw) : raw;
  const item = chosen.candidate.item;
  notes.push(`${name} at ${fallback.upstream} chose ${tool.id} (rank ${rank + 1}) in ${Math.round(answer.cost.ms)} ms`);
  const call = { tool: tool.id, arguments: args, ...(item ? { item } : {}) };
  return { status: 'resolved', call, confidence: callConfidence, candidates, timings: s.finish(), notes, fallback: use('called') };
}
