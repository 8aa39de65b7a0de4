import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import type { HttpClient, HttpRequest } from '../primitives/http-client.js';
import { streamChat } from './chat-stream.js';
import { createOpenAiDecoder, completionSchema, openAiBody, openAiFinishReason, openAiToolCalls, openAiUsage } from './openai-wire.js';
import {
  checkRequest,
  commonOptionsSchema,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_MS,
  endpointUrl,
  httpHandle,
  parseOptions,
  type ProviderOptions,
} from './provider-options.js';
import type { ChatCompletion, ChatEvent, ChatProvider, ChatRequest } from './types.js';
import { jsonPost, requestJson } from './request-json.js';
import { createRedactor, malformedAnswer, type UpstreamContext } from './upstream-error.js';

/**
 * The adapter for OpenAI's Chat Completions API and the servers that copy it (llama.cpp,
 * Ollama, vLLM, LM Studio…): POST {baseUrl}/chat/completions, streamed as `data:` chunks up to
 * `data: [DONE]`, usage asked for with `stream_options.include_usage`.
 */

export interface OpenAiProviderOptions extends ProviderOptions {
  /** e.g. https://api.openai.com/v1, http://127.0.0.1:8080/v1 (llama.cpp), http://127.0.0.1:11434/v1 (Ollama). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; optional because local servers often need none. */
  apiKey?: string;
}

const optionsSchema = commonOptionsSchema.extend({ baseUrl: z.string().min(1).max(4096) });
const WHO = 'OpenAI provider';

export function createOpenAiProvider(options: OpenAiProviderOptions): ChatProvider {
  const o = parseOptions(optionsSchema, options, WHO);
  const url = endpointUrl(o.baseUrl, '/chat/completions', WHO);
  const shownUrl = `${url.origin}${url.pathname}`;
  const handle = httpHandle(o.http as HttpClient | undefined);
  const redact = createRedactor(o.apiKey);
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;

  const context = (model: string): UpstreamContext => ({
    provider: 'openai',
    label: `OpenAI-compatible upstream ${url.host} (model ${model})`,
    url: shownUrl,
    model,
    redact,
  });

  function httpRequest(body: Record<string, unknown>, stream: boolean, signal: AbortSignal | undefined): HttpRequest {
    const auth: Record<string, string> = o.apiKey === undefined ? {} : { authorization: `Bearer ${o.apiKey}` };
    return jsonPost({ url: url.href, body, stream, auth, timeoutMs, maxResponseBytes, signal });
  }

  async function* stream(request: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    handle.check(WHO);
    const r = checkRequest(request, WHO);
    throwIfAborted(signal, `${WHO}: the stream`);
    const ctx = context(r.model);
    const fallback = () => ({ type: 'start' as const, id: `chatcmpl-${randomUUID()}`, model: r.model });
    yield* streamChat(handle.http, httpRequest(openAiBody(r, true), true, signal), createOpenAiDecoder(ctx), fallback, ctx);
  }

  async function complete(request: ChatRequest, signal?: AbortSignal): Promise<ChatCompletion> {
    handle.check(WHO);
    const r = checkRequest(request, WHO);
    throwIfAborted(signal, `${WHO}: the completion`);
    const ctx = context(r.model);
    const c = await requestJson(handle.http, httpRequest(openAiBody(r, false), false, signal), completionSchema, 'a chat.completion', ctx);
    const choice = c.choices.find((x) => (x.index ?? 0) === 0) ?? c.choices[0];
    const usage = openAiUsage(c.usage);
    const reason = typeof choice?.finish_reason === 'string' ? openAiFinishReason(choice.finish_reason) : 'other';
    const read = choice === undefined ? { calls: [] } : openAiToolCalls(choice.message);
    if ('problem' in read) throw malformedAnswer(ctx, read.problem);
    const toolCalls = read.calls;
    return {
      id: c.id ?? `chatcmpl-${randomUUID()}`,
      model: c.model ?? r.model,
      text: choice?.message.content ?? '',
      ...(toolCalls.length === 0 ? {} : { toolCalls }),
      finish: { type: 'finish', reason, ...(usage === undefined ? {} : { usage }) },
    };
  }

  return { kind: 'openai', stream, complete, close: () => handle.close() };
}
