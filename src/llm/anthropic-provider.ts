import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import type { HttpClient, HttpRequest } from '../primitives/http-client.js';
import { anthropicBody, anthropicFinishReason, anthropicToolCalls, anthropicUsage, createAnthropicDecoder, messageSchema } from './anthropic-wire.js';
import { streamChat } from './chat-stream.js';
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
import { jsonPost, requestJson } from './request-json.js';
import type { ChatCompletion, ChatEvent, ChatProvider, ChatRequest } from './types.js';
import { createRedactor, malformedAnswer, type UpstreamContext } from './upstream-error.js';

/**
 * The adapter for Anthropic's Messages API: POST {baseUrl}/v1/messages with `x-api-key` and
 * `anthropic-version`, system messages lifted into the top-level `system` field, streamed as
 * `event:` + `data:` pairs from message_start to message_stop.
 */

export interface AnthropicProviderOptions extends ProviderOptions {
  /** Default https://api.anthropic.com; a base that already ends in /v1 is accepted too. */
  baseUrl?: string;
  apiKey: string;
  /** The `anthropic-version` header; default 2023-06-01. */
  version?: string;
}

export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

const optionsSchema = commonOptionsSchema.extend({
  baseUrl: z.string().min(1).max(4096).optional(),
  apiKey: z.string('is required: the key Anthropic issued, sent as x-api-key').regex(/^[\x21-\x7e]{1,4096}$/, 'must be 1 to 4096 printable ASCII characters without spaces'),
  version: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2023-06-01').optional(),
});
const WHO = 'Anthropic provider';

export function createAnthropicProvider(options: AnthropicProviderOptions): ChatProvider {
  const o = parseOptions(optionsSchema, options, WHO);
  const base = (o.baseUrl ?? DEFAULT_ANTHROPIC_BASE_URL).replace(/\/+$/, '');
  // Both https://api.anthropic.com and https://api.anthropic.com/v1 are common in configs.
  const url = endpointUrl(base, /\/v1$/.test(base.replace(/[?#].*$/, '')) ? '/messages' : '/v1/messages', WHO);
  const shownUrl = `${url.origin}${url.pathname}`;
  const handle = httpHandle(o.http as HttpClient | undefined);
  const redact = createRedactor(o.apiKey);
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const version = o.version ?? DEFAULT_ANTHROPIC_VERSION;

  const context = (model: string): UpstreamContext => ({
    provider: 'anthropic',
    label: `Anthropic upstream ${url.host} (model ${model})`,
    url: shownUrl,
    model,
    redact,
  });

  function httpRequest(body: Record<string, unknown>, stream: boolean, signal: AbortSignal | undefined): HttpRequest {
    const auth = { 'x-api-key': o.apiKey, 'anthropic-version': version };
    return jsonPost({ url: url.href, body, stream, auth, timeoutMs, maxResponseBytes, signal });
  }

  async function* stream(request: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    handle.check(WHO);
    const r = checkRequest(request, WHO);
    const body = anthropicBody(r, true, WHO);
    throwIfAborted(signal, `${WHO}: the stream`);
    const ctx = context(r.model);
    const fallback = () => ({ type: 'start' as const, id: `msg_${randomUUID().replaceAll('-', '')}`, model: r.model });
    yield* streamChat(handle.http, httpRequest(body, true, signal), createAnthropicDecoder(ctx), fallback, ctx);
  }

  async function complete(request: ChatRequest, signal?: AbortSignal): Promise<ChatCompletion> {
    handle.check(WHO);
    const r = checkRequest(request, WHO);
    const body = anthropicBody(r, false, WHO);
    throwIfAborted(signal, `${WHO}: the completion`);
    const ctx = context(r.model);
    const m = await requestJson(handle.http, httpRequest(body, false, signal), messageSchema, 'an Anthropic message', ctx);
    const usage = anthropicUsage(m.usage, undefined);
    const read = anthropicToolCalls(m.content);
    if ('problem' in read) throw malformedAnswer(ctx, read.problem);
    const toolCalls = read.calls;
    return {
      id: m.id,
      model: m.model || r.model,
      text: m.content.map((block) => (block.type === 'text' && typeof block.text === 'string' ? block.text : '')).join(''),
      ...(toolCalls.length === 0 ? {} : { toolCalls }),
      finish: { type: 'finish', reason: typeof m.stop_reason === 'string' ? anthropicFinishReason(m.stop_reason) : 'other', ...(usage === undefined ? {} : { usage }) },
    };
  }

  return { kind: 'anthropic', stream, complete, close: () => handle.close() };
}
