/** The `resolve` meta-tool: an intent in words becomes one call (tool + arguments), run through the tool proxy. */
import { z } from 'zod';
import { candidateRights } from '../proxy/tool-rights.js';
import { askBackFor } from '../resolver/ask-back.js';
import { compactSchema } from '../resolver/compact-schema.js';
import { exampleCall } from '../resolver/example-call.js';
import { planSteps } from '../resolver/step-plan.js';
import type { Candidate, Resolution } from '../resolver/types.js';
import { callerFields, outcomeResult, proxyCall, textResult, type MetaContext, type MetaResult } from './meta-common.js';
import { runSteps } from './meta-resolve-steps.js';

const CANDIDATES = 5;

export const resolveShape = {
  intent: z
    .string({ error: (issue) => (issue.input === undefined ? 'intent is required: what you want done, in words' : 'intent must be a string') })
    .trim()
    .min(1, 'intent must not be empty; say what you want done, e.g. "read the README"')
    .max(16_000, 'intent is longer than 16000 characters; state the request in a sentence or two')
    .describe('What you want done, in plain words, with the values it needs, e.g. "read the file docs/setup.md"'),
  execute: z.boolean({ error: 'execute must be true or false' }).optional().describe('Run the resolved call (default true); false only shows it'),
  context: z
    .string({ error: 'context must be a string' })
    .max(64_000, 'context is longer than 64000 characters; pass the last few messages only')
    .optional()
    .describe('Recent conversation text the intent refers to ("that file"); used for arguments only'),
};

type ResolveArgs = z.output<z.ZodObject<typeof resolveShape>>;

/**
 * An intent written as ordered steps ("… and then …") resolves and runs step by step
 * (meta-resolve-steps.ts). `picked`: the tool the client chose from an ask-back menu, for the
 * whole intent (a menu is only offered for a single one).
 */
export async function resolve(ctx: MetaContext, args: ResolveArgs, signal?: AbortSignal, picked?: string): Promise<MetaResult> {
  const resolveText = (text: string): Promise<Resolution> =>
    ctx.resolver.resolve(text, { limit: CANDIDATES, ...(args.context !== undefined ? { context: args.context } : {}), ...(signal ? { signal } : {}), ...(picked !== undefined ? { tool: picked } : {}) });
  if (picked !== undefined) return resolveOne(ctx, await resolveText(args.intent), args, signal);
  const plan = await planSteps(args.intent, resolveText, ctx.steps);
  if (plan.kind === 'refused') return textResult(`not run: ${plan.reason}`, { status: 'refused', reason: plan.reason });
  if (plan.kind === 'steps') return runSteps(plan.steps, { resolve: resolveText, run: (resolution) => resolveOne(ctx, resolution, args, signal) });
  return resolveOne(ctx, await resolveText(args.intent), args, signal);
}

/** One intent's (or one step's) resolution: shown, or run through the tool proxy. */
async function resolveOne(ctx: MetaContext, resolution: Resolution, args: ResolveArgs, signal?: AbortSignal): Promise<MetaResult> {
  if (resolution.status === 'unresolved') {
    // The menu, its schemas and the example call offer only what this caller may run.
    const tools = ctx.project.registry.tools;
    const ask = askBackFor(resolution, candidateRights(ctx.project.policy, ctx.caller, tools));
    const toolOf = (c: Candidate) => (c.item === undefined ? tools.get(c.tool) : undefined);
    const schemas = ask.candidates.slice(0, 3).flatMap((c) => {
      const tool = toolOf(c);
      return tool ? [compactSchema(tool)] : [];
    });
    const top = ask.candidates[0] && toolOf(ask.candidates[0]);
    const text = { intent: args.intent, ...(args.context !== undefined ? { context: args.context } : {}) };
    const example = top && exampleCall(top, ask.found ? { values: ask.found, text } : undefined);
    const { found: _dropped, ...rest } = resolution;
    return unresolved({ ...rest, ...ask }, ask.candidates.map(candidateView), schemas, example);
  }
  const candidates = resolution.candidates.map(candidateView);

  const call = resolution.call;
  const confidence = round(resolution.confidence);
  const lead = `resolved to ${call.item ? `${call.item} ` : ''}${call.tool} ${JSON.stringify(call.arguments)} (confidence ${confidence})`;
  const summary = { status: 'resolved', call: { tool: call.tool, ...(call.item ? { item: call.item } : {}), arguments: call.arguments }, confidence, candidates, notes: resolution.notes };
  if (args.execute === false) {
    return textResult(`${lead}; not run (execute: false). Run it with execute(item_type="${call.item ?? 'tool'}", action="run", item_id="${call.tool}", parameters=${JSON.stringify(call.arguments)}).`, summary);
  }
  const outcome = await proxyCall(ctx, { target: { tool: call.tool, ...(call.item ? { item: call.item } : {}), args: call.arguments }, caller: callerFields(ctx), ...(signal ? { run: { signal } } : {}) }, { intent: args.intent, confidence });
  const result = outcomeResult(outcome, lead);
  return { ...result, structuredContent: { ...summary, result: result.structuredContent } };
}

/** No call is an expected answer, not a failure: the agent gets the reason and what to try. */
function unresolved(resolution: Extract<Resolution, { status: 'unresolved' }>, candidates: Array<Record<string, unknown>>, schemas: string[], example: string | undefined): MetaResult {
  const lines = [`unresolved: ${resolution.reason}`];
  if (resolution.missing.length > 0) lines.push(`missing arguments: ${resolution.missing.join(', ')}`);
  if (candidates.length > 0) lines.push(`candidates: ${candidates.map((c) => `${String(c['tool'])} (${String(c['score'])})`).join(', ')}`);
  if (schemas.length > 0) lines.push(`the closest, as they are called:\n${schemas.map((s) => `- ${s}`).join('\n')}`);
  const top = candidates[0]?.['tool'];
  if (resolution.found && Object.keys(resolution.found).length > 0 && typeof top === 'string') lines.push(`values read from the intent (check them): ${JSON.stringify(resolution.found)}`);
  if (example !== undefined && typeof top === 'string') lines.push(`if ${top} is what you mean, resolve the exact call: ${example}`);
  lines.push(
    'Say it again with the missing values, or name the tool: execute(item_type="tool", action="run", item_id=ID, parameters={...}); search(item_type="tool", query=...) lists tools with their parameters.',
  );
  return textResult(lines.join('\n'), {
    status: 'unresolved',
    reason: resolution.reason,
    missing: resolution.missing,
    ...(resolution.found ? { found: resolution.found } : {}),
    confidence: round(resolution.confidence),
    candidates,
    notes: resolution.notes,
  });
}

function candidateView(c: Candidate): Record<string, unknown> {
  return { tool: c.tool, ...(c.item ? { item: c.item } : {}), score: round(c.score) };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
