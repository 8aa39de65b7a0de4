import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { parseJsonWithin } from '../base/json-depth.js';
import { validateArgs } from '../executor/validate-args.js';
import { createHttpClient, type HttpClient } from '../primitives/http-client.js';
import type { Tool, ToolParameter } from '../registry/types.js';
import { MAX_INTENT_CHARS, type FilledArguments } from './fill-args.js';
import { isPlainObject, setOwn } from '../base/plain-object.js';

/**
 * The optional generative backend for argument filling: asks an OpenAI-compatible chat server
 * (llama.cpp, Ollama, vLLM, OpenAI…) to call the chosen tool, then holds the answer to the same
 * validation as any agent's call. Off unless configured; the resolver never needs it.
 */

export interface LlmArgumentFillerOptions {
  /** Base URL (`http://127.0.0.1:8080` → POST …/v1/chat/completions; a base ending in /v1 gets /chat/completions), or the full endpoint. */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer …`; never logged or echoed. */
  apiKey?: string;
  /** Limit for the response headers and for each pause in the body; default 10_000. */
  timeoutMs?: number;
  /** A shared client (closed by its owner); by default the filler makes and closes its own. */
  http?: HttpClient;
  /** Cap on the response body; default 256 KiB. */
  maxResponseBytes?: number;
}

export interface LlmArgumentFiller {
  fill(intent: string, tool: Tool, options?: { context?: string; signal?: AbortSignal }): Promise<FilledArguments>;
  close(): Promise<void>;
}

const SYSTEM_PROMPT = "Fill the arguments of the function from the user's request. Use only values stated in the request; leave out optional arguments the request does not give.";
/** The model's guess is not evidence the way a quoted value in the intent is. */
const MODEL_CONFIDENCE = 0.7;
const DEFAULT_CONFIDENCE = 0.8;
const MAX_CONTEXT_CHARS = 8192;
const MAX_ARGUMENT_CHARS = 64 * 1024;
const EXCERPT_CHARS = 500;

const optionsSchema = z.object({
  url: z.string().min(1).max(4096),
  model: z.string().min(1).max(512),
  apiKey: z.string().max(8192).optional(),
  timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
  maxResponseBytes: z.number().int().min(1024).max(64 * 1024 * 1024).optional(),
});

// Loose: servers add id, usage, logprobs, reasoning_content… and only these fields matter.
const toolCallSchema = z.looseObject({
  function: z.looseObject({
    name: z.string().optional(),
    // OpenAI sends a JSON string; some compatible servers send the object itself.
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]),
  }),
});
const responseSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({
          content: z.string().nullish(),
          tool_calls: z.array(toolCallSchema).nullish(),
        }),
      }),
    )
    .min(1),
});

function endpoint(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new KiwiError('INVALID_INPUT', `LLM argument filler: "${raw.slice(0, 200)}" is not an absolute URL; give e.g. http://127.0.0.1:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new KiwiError('INVALID_INPUT', `LLM argument filler: the URL must be http: or https:, not ${url.protocol}`);
  const base = url.pathname.replace(/\/+$/, '');
  if (!/\/chat\/completions$/.test(base)) url.pathname = /\/v1$/.test(base) ? `${base}/chat/completions` : `${base}/v1/chat/completions`;
  return url;
}

/** OpenAI accepts function names of `[A-Za-z0-9_-]{1,64}`; tool ids may also hold dots. */
export function functionName(toolId: string): string {
  return toolId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'tool';
}

/** The JSON Schema of the tool's parameters, as the `parameters` of an OpenAI function. */
export function parametersSchema(params: readonly ToolParameter[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const p of params) {
    // `any`: no type at all, as JSON Schema writes an unconstrained value.
    const schema: Record<string, unknown> = p.type === 'any' ? {} : { type: p.type };
    if (p.description !== undefined) schema.description = p.description;
    if (p.enum !== undefined) schema.enum = p.enum;
    if (p.default !== undefined) schema.default = p.default;
    if (p.type === 'array' && p.items !== undefined) schema.items = { type: p.items.type };
    setOwn(properties, p.name, schema);
  }
  return { type: 'object', properties, required: params.filter((p) => p.required).map((p) => p.name), additionalProperties: false };
}

function userMessage(intent: string, context: string | undefined, notes: string[]): string {
  const request = intent.replaceAll('\u0000', '').trim();
  const cut = request.slice(0, MAX_INTENT_CHARS);
  if (cut.length < request.length) notes.push(`intent cut to its first ${MAX_INTENT_CHARS} characters`);
  const ctx = context?.replaceAll('\u0000', '').trim() ?? '';
  if (ctx === '') return cut;
  // The most recent conversation is what an intent refers to.
  const recent = ctx.slice(-MAX_CONTEXT_CHARS);
  if (recent.length < ctx.length) notes.push(`context cut to its last ${MAX_CONTEXT_CHARS} characters`);
  return `Request: ${cut}\n\nConversation context (only for values the request refers to):\n${recent}`;
}

/** The first `{` to the last `}`: small models wrap JSON in ``` fences, <tool_call> tags or a sentence. */
export function jsonInText(text: string): unknown {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) return undefined;
  try {
    return parseJsonWithin(text.slice(start, end + 1));
  } catch {
    return undefined;
  }
}

export function createLlmArgumentFiller(options: LlmArgumentFillerOptions): LlmArgumentFiller {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KiwiError('INVALID_INPUT', `LLM argument filler: ${issue?.path.join('.') || 'options'}: ${issue?.message ?? 'invalid'}`);
  }
  const o = parsed.data;
  const url = endpoint(o.url);
  const where = `${url.origin}${url.pathname}`;
  const http = options.http ?? createHttpClient();
  const ownsClient = options.http === undefined;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const maxResponseBytes = o.maxResponseBytes ?? 256 * 1024;
  const apiKey = o.apiKey === '' ? undefined : o.apiKey;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
  const source = `arguments from ${o.model} at ${url.host}`;
  let closed = false;
  let closing: Promise<void> | undefined;

  /** A printable start of what the server said, without the API key should a server echo it. */
  const excerpt = (body: string): string => {
    let flat = body.replace(/\s+/g, ' ').trim();
    if (apiKey !== undefined) flat = flat.replaceAll(apiKey, '[redacted]');
    if (flat === '') return '(empty body)';
    return flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS)}…` : flat;
  };
  const upstream = (problem: string, details: Record<string, unknown> = {}) =>
    new KiwiError('UPSTREAM_HTTP', `chat server ${where} (model ${o.model}): ${problem}`, { details: { url: where, model: o.model, ...details } });

  function statusHint(status: number, location: string | undefined): string {
    if (status === 401 || status === 403) return '; check the API key';
    if (status === 404) return '; check the URL (it should serve POST /v1/chat/completions) and the model name';
    if (status === 400) return '; the model or server may not support function calling (llama.cpp needs --jinja)';
    if (status === 429) return '; the server is rate limiting, try again later';
    if (status >= 300 && status <= 399) return `; redirects are not followed, give the final URL${location ? ` (${location.slice(0, 200)})` : ''}`;
    return '';
  }

  /** The arguments object the model produced for `name`, from a tool call or from JSON in the content. */
  function readArguments(body: string, name: string): Record<string, unknown> {
    let json: unknown;
    try {
      json = parseJsonWithin(body);
    } catch {
      throw upstream(`answered with a body that is not JSON: ${excerpt(body)}`);
    }
    const checked = responseSchema.safeParse(json);
    const message = checked.success ? checked.data.choices[0]?.message : undefined;
    const call = message?.tool_calls?.find((c) => c.function.name === undefined || c.function.name === name);
    let raw: unknown;
    if (call !== undefined) {
      const args = call.function.arguments;
      if (typeof args !== 'string') raw = args;
      else {
        if (args.length > MAX_ARGUMENT_CHARS) {
          throw new KiwiError('OUTPUT_TOO_LARGE', `chat server ${where} (model ${o.model}): the model's arguments are ${args.length} characters, over the ${MAX_ARGUMENT_CHARS}-character cap; the answer is not a plausible tool call, check the model`);
        }
        try {
          raw = args.trim() === '' ? {} : parseJsonWithin(args);
        } catch {
          raw = undefined;
        }
      }
    } else if (typeof message?.content === 'string') {
      if (message.content.length > MAX_ARGUMENT_CHARS) {
        throw new KiwiError('OUTPUT_TOO_LARGE', `chat server ${where} (model ${o.model}): the model answered ${message.content.length} characters of text, over the ${MAX_ARGUMENT_CHARS}-character cap; check the model`);
      }
      raw = jsonInText(message.content);
      // The shape models trained on tool use print: {"name": "<function>", "arguments"|"parameters": {...}}.
      if (isPlainObject(raw) && raw.name === name) raw = isPlainObject(raw.arguments) ? raw.arguments : isPlainObject(raw.parameters) ? raw.parameters : raw;
    }
    if (!isPlainObject(raw)) {
      const called = message?.tool_calls?.map((c) => c.function.name).filter((n) => n !== undefined) ?? [];
      const why =
        call !== undefined
          ? "its tool call's arguments are not a JSON object"
          : called.length > 0
            ? `it called ${called.join(', ')} instead of ${name}`
            : 'use a model that supports function calling (llama.cpp needs --jinja) or one that answers in JSON';
      throw upstream(`the model's answer had no tool call or JSON arguments; ${why}: ${excerpt(body)}`);
    }
    return raw;
  }

  function judge(tool: Tool, given: Record<string, unknown>, notes: string[]): FilledArguments {
    const fromModel = (p: ToolParameter): boolean => Object.hasOwn(given, p.name) && given[p.name] !== undefined && given[p.name] !== null;
    let args: Record<string, unknown>;
    try {
      // Checked with every parameter optional: a required one the model left out is `missing`
      // (the resolver may find it elsewhere), not a reason to refuse the values it did give.
      args = validateArgs({ ...tool, parameters: tool.parameters.map((p) => ({ ...p, required: false })) }, given);
    } catch (error) {
      if (!isKiwiError(error, 'INVALID_INPUT')) throw error;
      // All or nothing: a call built on a half-wrong answer is worse than asking for the rest.
      const missing = tool.parameters.filter((p) => p.required && !validAlone(tool, p, given, fromModel(p))).map((p) => p.name);
      return { arguments: {}, missing, confidence: 0, notes: [...notes, `the model's arguments were refused: ${error.message}`] };
    }
    const modelled = tool.parameters.filter((p) => Object.hasOwn(args, p.name) && fromModel(p));
    const defaulted = tool.parameters.filter((p) => Object.hasOwn(args, p.name) && !fromModel(p));
    for (const p of defaulted) notes.push(`${p.name}: the schema default`);
    const confidence = modelled.length > 0 ? MODEL_CONFIDENCE : defaulted.length > 0 ? DEFAULT_CONFIDENCE : tool.parameters.some((p) => p.required) ? 0 : 1;
    const missing = tool.parameters.filter((p) => p.required && !Object.hasOwn(args, p.name)).map((p) => p.name);
    return { arguments: args, missing, confidence, notes };
  }

  async function fill(intent: string, tool: Tool, fillOptions: { context?: string; signal?: AbortSignal } = {}): Promise<FilledArguments> {
    if (closed) throw new KiwiError('INTERNAL', 'this LLM argument filler was closed; create a new one');
    throwIfAborted(fillOptions.signal, `filling the arguments of ${tool.id}`);
    const notes = [source];
    if (tool.parameters.length === 0) return { arguments: {}, missing: [], confidence: 1, notes: [] };
    const name = functionName(tool.id);
    const body = {
      model: o.model,
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: userMessage(intent, fillOptions.context, notes) },
      ],
      tools: [{ type: 'function', function: { name, description: tool.description, parameters: parametersSchema(tool.parameters) } }],
      tool_choice: { type: 'function', function: { name } },
      temperature: 0,
      stream: false,
    };
    const res = await http.request({
      method: 'POST',
      url: url.href,
      headers,
      body: JSON.stringify(body),
      connectTimeoutMs: timeoutMs,
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
      maxResponseBytes,
      maxRedirects: 0,
      ...(fillOptions.signal !== undefined ? { signal: fillOptions.signal } : {}),
    });
    if (res.status < 200 || res.status > 299) {
      throw upstream(`answered ${res.status}: ${excerpt(res.body)}${statusHint(res.status, res.headers.location)}`, { status: res.status, body: excerpt(res.body) });
    }
    return judge(tool, readArguments(res.body, name), notes);
  }

  return {
    fill,
    close() {
      closed = true;
      closing ??= ownsClient ? http.close() : Promise.resolve();
      return closing;
    },
  };
}

/** Whether the model's value for one parameter passes on its own (or, when absent, a default stands in). */
function validAlone(tool: Tool, param: ToolParameter, given: Record<string, unknown>, present: boolean): boolean {
  const one: Record<string, unknown> = {};
  if (present) setOwn(one, param.name, given[param.name]);
  try {
    validateArgs({ ...tool, parameters: [param] }, one);
    return true;
  } catch {
    return false;
  }
}
