import { describeError } from '../base/errors.js';
import type { LocalChatModel } from '../llm/gguf-chat-model.js';
import { parseJsonWithin } from '../base/json-depth.js';
import { isPlainObject, setOwn } from '../base/plain-object.js';
import type { Tool, ToolParameter } from '../registry/types.js';
import { parametersSchema } from './llm-argument-filler.js';
import { DEFAULT_FALLBACK_CANDIDATES, DEFAULT_FALLBACK_TIMEOUT_MS, functionNames, MAX_FALLBACK_OUTPUT_TOKENS, requestText, type FallbackAnswer, type FallbackAsk, type FallbackCost, type ResolverFallback } from './model-fallback.js';

/**
 * The fallback model run in the gateway's own process (resolver.yaml `fallback: { model_file }`):
 * a small GGUF model shown the intent and the top candidates, whose whole answer a grammar holds
 * to one of `{"function": <a candidate>, "arguments": <its parameters>}` or `{"function": null,
 * "why": …}`. The grammar gives the answer its shape, not its truth: the call is checked like any
 * fallback's (fallback-call.ts). Nothing is priced: the tokens are counted, no dollars.
 */

export interface LocalModelFallbackOptions {
  model: LocalChatModel;
  /** How many of the top candidates it chooses among; default 5. */
  candidates?: number;
  /** The whole ask's limit, waiting for the model included; default 10 s. */
  timeoutMs?: number;
  now?: () => number;
}

/** Where `ResolverFallback.upstream` would name a server: the model runs here. */
export const IN_PROCESS = 'in-process';

const SYSTEM_PROMPT =
  'Choose the one function below that does what the user asks, and answer with JSON only: {"function": "<its name>", "arguments": {…}}, with argument values copied from the user\'s words, and null for an optional argument the user does not give. If no function does what the user asks, answer {"function": null, "why": "<a short reason>"}.';
/** A small model's window is short: less of the agent's text than a served model gets. */
const MAX_CONTEXT_CHARS = 2048;
const MAX_DESCRIPTION_CHARS = 300;
/** Every string the grammar lets it write is bounded, so the answer always can end (llama.cpp refuses repetitions past 2000). */
const MAX_STRING_CHARS = 256;
const MAX_ITEMS = 16;
const MAX_WHY_CHARS = 200;

type Schema = Record<string, unknown>;

export function createLocalModelFallback(options: LocalModelFallbackOptions): ResolverFallback {
  const { model } = options;
  const now = options.now ?? (() => performance.now());
  const timeoutMs = options.timeoutMs ?? DEFAULT_FALLBACK_TIMEOUT_MS;
  const candidates = options.candidates ?? DEFAULT_FALLBACK_CANDIDATES;

  async function ask(a: FallbackAsk): Promise<FallbackAnswer> {
    const t0 = now();
    const byName = functionNames(a.tools.slice(0, candidates));
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = a.signal === undefined ? timeout : AbortSignal.any([a.signal, timeout]);
    const costOf = (tokens?: { inputTokens: number; outputTokens: number }): FallbackCost => ({ ms: Math.round((now() - t0) * 1000) / 1000, ...tokens });
    let answer;
    try {
      answer = await model.generate({ system: SYSTEM_PROMPT, user: userMessage(a, byName), schema: answerSchema(byName), maxTokens: MAX_FALLBACK_OUTPUT_TOKENS }, signal);
    } catch (error) {
      if (a.signal?.aborted) throw a.signal.reason;
      return { kind: 'failed', why: describeError(error), cost: costOf() };
    }
    const cost = costOf({ inputTokens: answer.inputTokens, outputTokens: answer.outputTokens });
    // The intent's own cancellation is not the model's failure: it goes up as it came.
    if (a.signal?.aborted) throw a.signal.reason;
    if (answer.stop === 'aborted') return { kind: 'failed', why: `no answer within ${timeoutMs} ms`, cost };
    if (answer.stop === 'max-tokens') return { kind: 'failed', why: `its answer ran past the ${MAX_FALLBACK_OUTPUT_TOKENS}-token cap`, cost };
    let parsed: unknown;
    try {
      parsed = parseJsonWithin(answer.text.trim());
    } catch {
      return { kind: 'failed', why: `its answer is not the JSON its grammar allows: "${answer.text.trim().slice(0, 200)}"`, cost };
    }
    if (!isPlainObject(parsed)) return { kind: 'failed', why: 'its answer is not a JSON object', cost };
    if (parsed.function === null) return { kind: 'declined', why: `it called no function${typeof parsed.why === 'string' && parsed.why.trim() ? `: "${parsed.why.trim().slice(0, MAX_WHY_CHARS)}"` : ''}`, cost };
    const tool = typeof parsed.function === 'string' ? byName.get(parsed.function) : undefined;
    if (tool === undefined) return { kind: 'failed', why: `it called ${JSON.stringify(parsed.function)?.slice(0, 100)}, which is not one of the ${byName.size} candidates it was shown`, cost };
    if (!isPlainObject(parsed.arguments)) return { kind: 'failed', why: `its arguments for ${tool.id} are not a JSON object`, cost };
    return { kind: 'call', tool, arguments: givenArguments(tool, parsed.arguments), cost };
  }

  return { model: model.name, upstream: IN_PROCESS, candidates, ask, close: () => model.close() };
}

/**
 * The grammar lists every property (node-llama-cpp's JSON grammar requires them all), so an
 * optional parameter the user did not give is written null: left out here, as if never written.
 */
function givenArguments(tool: Tool, written: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(written)) {
    const p = tool.parameters.find((x) => x.name === name);
    if (value === null && p !== undefined && !p.required) continue;
    setOwn(out, name, value);
  }
  return out;
}

/** One answer of each candidate's call, or the declined form; what the grammar cannot say (patterns, bounds) validation checks. */
function answerSchema(byName: ReadonlyMap<string, Tool>): Schema {
  const calls = [...byName].map(([name, tool]) => {
    const properties: Schema = {};
    for (const p of tool.parameters) setOwn(properties, p.name, p.required ? valueSchema(p) : { oneOf: [valueSchema(p), { type: 'null' }] });
    return { type: 'object', properties: { function: { const: name }, arguments: { type: 'object', properties } } };
  });
  return { oneOf: [...calls, { type: 'object', properties: { function: { const: null }, why: { type: 'string', maxLength: MAX_WHY_CHARS } } }] };
}

const SCALAR: Schema = { oneOf: [{ type: 'string', maxLength: MAX_STRING_CHARS }, { type: ['number', 'boolean', 'null'] }] };

function valueSchema(p: Pick<ToolParameter, 'type'> & Partial<Pick<ToolParameter, 'enum' | 'format' | 'items'>>): Schema {
  const choices = p.enum?.filter((v) => v === null || ['string', 'number', 'boolean'].includes(typeof v));
  if (choices !== undefined && choices.length > 0 && choices.length === p.enum?.length) return { enum: choices };
  switch (p.type) {
    case 'string':
      return p.format === 'date' || p.format === 'date-time' || p.format === 'time' ? { type: 'string', format: p.format } : { type: 'string', maxLength: MAX_STRING_CHARS };
    case 'number':
    case 'integer':
    case 'boolean':
      return { type: p.type };
    case 'array':
      return { type: 'array', items: p.items === undefined ? SCALAR : valueSchema(p.items), maxItems: MAX_ITEMS };
    case 'object':
      return { type: 'object', additionalProperties: SCALAR, maxProperties: MAX_ITEMS };
    case 'any':
      return SCALAR;
  }
}

function userMessage(a: FallbackAsk, byName: ReadonlyMap<string, Tool>): string {
  const functions = [...byName].map(([name, tool]) => JSON.stringify({ name, description: tool.description.slice(0, MAX_DESCRIPTION_CHARS), parameters: parametersSchema(tool.parameters) }));
  return `Request: ${requestText(a.intent, a.context, MAX_CONTEXT_CHARS)}\n\nFunctions:\n${functions.join('\n')}`;
}
