import { isKiwiError } from '../errors.js';
import { validateArgs } from '../executor/validate-args.js';
import type { Tool } from '../registry/types.js';
import { fillArguments } from './fill-args.js';
import { calibrate, type ResolverModel } from './learned-model.js';
import type { ResolverFallback } from './model-fallback.js';
import type { Candidate, CompleteOptions, FallbackUse, Resolution } from './types.js';
import { valueEvidence } from './value-evidence.js';
import { setOwn } from '../plain-object.js';

/**
 * Where the rules stop short of a call (a value not found, or a call below the gate), the
 * fallback model may choose among the top candidates and write the call. Its call runs only as
 * any call from plain words does: it passes the tool's schema, its tool fits past the threshold,
 * and its confidence — the tool's times the weakest evidence for any value it wrote — clears the
 * gate. A value the text does not hold is a guess, and refuses the call.
 */

export interface FallbackGround {
  fallback: ResolverFallback;
  /** The call gate the resolver applies (0: none). */
  gate: number;
  threshold: number;
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
  const { fallback, gate } = g;
  const { intent, candidates, confidence, options, stopped } = s;
  const { notes } = stopped;
  const name = `fallback model ${fallback.model}`;
  // Even the best tool with every value stated would stay below the gate: a request would be wasted.
  if (gate > 0 && g.model && calibrate(g.model, confidence) < gate) {
    notes.push(`${name} not asked: even a call with every value stated would stay below the gate`);
    return stopped;
  }
  const shown = candidates.slice(0, fallback.candidates).flatMap((c) => {
    const tool = g.targetOf(c);
    return tool ? [{ candidate: c, tool }] : [];
  });
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
  const toolConfidence = rank === 0 ? confidence : Math.max(0, Math.min(1, chosen.candidate.score));
  if (toolConfidence < g.threshold) return refuse(`it ranks ${rank + 1} with score ${toolConfidence.toFixed(2)}, below the threshold ${g.threshold}`);
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
  // Loading a knowledge entry changes nothing: past the threshold it needs no gate (as in resolver.ts).
  if (item !== 'knowledge' && callConfidence < gate) return refuse(`the call's confidence ${callConfidence.toFixed(2)} is below the gate ${gate.toFixed(2)}`);
  notes.push(`${name} at ${fallback.upstream} chose ${tool.id} (rank ${rank + 1}) in ${Math.round(answer.cost.ms)} ms`);
  const call = { tool: tool.id, arguments: args, ...(item ? { item } : {}) };
  return { status: 'resolved', call, confidence: callConfidence, candidates, timings: s.finish(), notes, fallback: use('called') };
}
