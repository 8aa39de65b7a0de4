import { estimatePromptTokens, estimateTokens } from '../budgets/token-estimate.js';
import { describeError } from '../base/errors.js';
import { MAX_ARGS_BYTES } from '../executor/validate-args.js';
import { MAX_JSON_DEPTH, parseJsonWithin } from '../base/json-depth.js';
import type { ChatMessage, ChatProvider, ChatUsage } from '../llm/types.js';
import { isPlainObject } from '../base/plain-object.js';
import type { Tool } from '../registry/types.js';
import { functionName, jsonInText, parametersSchema } from './llm-argument-filler.js';

/**
 * The resolver's fallback model (resolver.yaml `fallback:`): a small function-calling model — a
 * local llama.cpp or Ollama server, or any upstream gateway.yaml routes to — asked where the rules
 * stop short. It is shown the intent and the top candidates as functions and calls one of them, or
 * none. What it answers is only a proposal: the resolver checks it like any call (resolver.ts).
 */

export interface ModelFallbackOptions {
  provider: ChatProvider;
  /** The model id sent upstream. */
  model: string;
  /** The gateway.yaml upstream serving it, for notes and the audit. */
  upstream: string;
  /** How many of the top candidates it chooses among; default 5. */
  candidates?: number;
  /** The whole exchange's limit; default 10 s. */
  timeoutMs?: number;
  /** US dollars per million tokens, when the model is priced. */
  price?: { inputPerMtok: number; outputPerMtok: number };
  now?: () => number;
}

export interface FallbackAsk {
  intent: string;
  /** The candidates, best first; the model may call only these. */
  tools: readonly Tool[];
  context?: string;
  signal?: AbortSignal;
}

export interface FallbackCost {
  ms: number;
  inputTokens?: number;
  outputTokens?: number;
  /** The upstream sent no count: the tokens are the gateway's estimate (token-estimate.ts). */
  estimated?: true;
  usd?: number;
}

export type FallbackAnswer =
  | { kind: 'call'; tool: Tool; arguments: Record<string, unknown>; cost: FallbackCost }
  | { kind: 'declined'; why: string; cost: FallbackCost }
  | { kind: 'failed'; why: string; cost: FallbackCost };

export interface ResolverFallback {
  readonly model: string;
  readonly upstream: string;
  /** How many candidates it is shown. */
  readonly candidates: number;
  ask(ask: FallbackAsk): Promise<FallbackAnswer>;
  /** Frees what it holds (a model loaded in this process); its owner calls it once, at close. */
  close?(): Promise<void>;
}

const SYSTEM_PROMPT =
  "Call the one function that does what the user asks, with argument values copied from the user's words. Leave out optional arguments the user does not give. If no function does what the user asks, do not call any.";
const MAX_INTENT_CHARS = 4096;
/** The agent's text before the intent a served model is shown (an in-process one takes less). */
const MAX_CONTEXT_CHARS = 4096;
const MAX_DESCRIPTION_CHARS = 1024;
/** A call of a few arguments fits easily; a model that rambles is cut off rather than waited for. */
export const MAX_FALLBACK_OUTPUT_TOKENS = 512;
export const DEFAULT_FALLBACK_CANDIDATES = 5;
export const DEFAULT_FALLBACK_TIMEOUT_MS = 10_000;

export function createModelFallback(options: ModelFallbackOptions): ResolverFallback {
  const now = options.now ?? (() => performance.now());
  const timeoutMs = options.timeoutMs ?? DEFAULT_FALLBACK_TIMEOUT_MS;
  const candidates = options.candidates ?? DEFAULT_FALLBACK_CANDIDATES;

  function costOf(t0: number, usage: ChatUsage | undefined): FallbackCost {
    const cost: FallbackCost = { ms: Math.round((now() - t0) * 1000) / 1000 };
    if (usage?.inputTokens !== undefined) cost.inputTokens = usage.inputTokens;
    if (usage?.outputTokens !== undefined) cost.outputTokens = usage.outputTokens;
    if (usage?.estimated === true) cost.estimated = true;
    const p = options.price;
    if (p !== undefined && usage !== undefined) cost.usd = ((usage.inputTokens ?? 0) * p.inputPerMtok + (usage.outputTokens ?? 0) * p.outputPerMtok) / 1_000_000;
    return cost;
  }

  async function ask(a: FallbackAsk): Promise<FallbackAnswer> {
    const t0 = now();
    const byName = functionNames(a.tools.slice(0, candidates));
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = a.signal === undefined ? timeout : AbortSignal.any([a.signal, timeout]);
    const messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: requestText(a.intent, a.context, MAX_CONTEXT_CHARS) },
    ];
    const tools = [...byName].map(([name, tool]) => ({ name, description: tool.description.slice(0, MAX_DESCRIPTION_CHARS), parameters: parametersSchema(tool.parameters) }));
    let completion;
    try {
      completion = await options.provider.complete({ model: options.model, messages, maxTokens: MAX_FALLBACK_OUTPUT_TOKENS, temperature: 0, clientTools: { tools, choice: { type: 'auto' }, parallel: false }, sideRequest: true }, signal);
    } catch (error) {
      // The intent's own cancellation is not the model's failure: it goes up as it came.
      if (a.signal?.aborted) throw error;
      const why = timeout.aborted ? `no answer within ${timeoutMs} ms` : describeError(error);
      return { kind: 'failed', why, cost: costOf(t0, undefined) };
    }
    // An upstream that sends no count is charged the estimate all the same, labelled as such.
    const reported = completion.finish.usage;
    const cost = costOf(t0, {
      inputTokens: reported?.inputTokens ?? estimatePromptTokens(messages) + estimateTokens(JSON.stringify(tools)),
      outputTokens: reported?.outputTokens ?? estimateTokens(completion.text + (completion.toolCalls ?? []).map((c) => c.name + c.arguments).join('')),
      ...(reported?.inputTokens === undefined || reported.outputTokens === undefined ? { estimated: true } : {}),
    });
    const native = completion.toolCalls?.[0];
    let name: string | undefined;
    let args: unknown;
    if (native !== undefined) {
      name = native.name;
      // The model's text is bounded only by the provider's response cap: a call larger than any
      // call may be is refused before it is parsed.
      if (native.arguments.length > MAX_ARGS_BYTES) return { kind: 'failed', why: `its arguments are ${native.arguments.length} characters, over the ${MAX_ARGS_BYTES}-character cap of a call`, cost };
      args = parseArguments(native.arguments);
    } else {
      // Small models often print the call as JSON instead: {"name": …, "arguments"|"parameters": {…}}.
      const printed = jsonInText(completion.text);
      if (isPlainObject(printed) && typeof printed.name === 'string') {
        name = printed.name;
        args = printed.arguments ?? printed.parameters ?? {};
      }
    }
    if (name === undefined) return { kind: 'declined', why: `it called no function${completion.text.trim() ? `: "${completion.text.trim().slice(0, 200)}"` : ''}`, cost };
    const tool = byName.get(name);
    if (tool === undefined) return { kind: 'failed', why: `it called "${name.slice(0, 100)}", which is not one of the ${byName.size} candidates it was shown`, cost };
    if (!isPlainObject(args)) return { kind: 'failed', why: `its arguments for ${tool.id} are not a JSON object of at most ${MAX_JSON_DEPTH} levels`, cost };
    return { kind: 'call', tool, arguments: args, cost };
  }

  return { model: options.model, upstream: options.upstream, candidates, ask };
}

/** Function names as OpenAI accepts them, made unique: `a.b` and `a_b` must not collide. */
export function functionNames(tools: readonly Tool[]): Map<string, Tool> {
  const out = new Map<string, Tool>();
  for (const tool of tools) {
    const base = functionName(tool.id);
    let name = base;
    for (let n = 2; out.has(name); n++) name = `${base.slice(0, 60)}_${n}`;
    out.set(name, tool);
  }
  return out;
}

function parseArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return parseJsonWithin(text);
  } catch {
    return undefined;
  }
}

/** The intent, capped, and the agent's last `maxContextChars` before it, marked as only a source of values: what any fallback model is asked. */
export function requestText(intent: string, context: string | undefined, maxContextChars: number): string {
  const request = intent.slice(0, MAX_INTENT_CHARS);
  const recent = context?.trim().slice(-maxContextChars) ?? '';
  return recent === '' ? request : `${request}\n\nEarlier in the conversation (only for values the request refers to):\n${recent}`;
}
