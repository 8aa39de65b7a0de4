import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { createHttpClient, type HttpClient } from '../primitives/http-client.js';
import { isPlainObject } from '../base/plain-object.js';
import { clientToolsProblem, MAX_NATIVE_CALLS } from './client-tools.js';
import type { ChatMessage, ChatRequest, ClientTools } from './types.js';

/** Option and request checks shared by the provider adapters: strict, because these are our own inputs. */

export interface ProviderOptions {
  apiKey?: string;
  /** A shared client (its owner closes it); by default the provider makes and closes its own. */
  http?: HttpClient;
  /** Longest wait for the response headers and for each pause in the body; default 120_000. */
  timeoutMs?: number;
  /** Cap on a whole streamed response and on a complete() body, in bytes; default 32 MiB. */
  maxResponseBytes?: number;
}

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

export const commonOptionsSchema = z.strictObject({
  // Printable ASCII without spaces: anything else could not travel in a header anyway.
  apiKey: z
    .string()
    .regex(/^[\x21-\x7e]{1,4096}$/, 'must be 1 to 4096 printable ASCII characters without spaces')
    .optional(),
  http: z
    .custom<HttpClient>((v) => typeof v === 'object' && v !== null && typeof (v as HttpClient).stream === 'function' && typeof (v as HttpClient).request === 'function', 'must be an HttpClient from createHttpClient()')
    .optional(),
  timeoutMs: z.number().int().positive().max(2 ** 31 - 1).optional(),
  maxResponseBytes: z.number().int().positive().optional(),
});

/** Parses options with `schema`; the message names the field but never echoes a value (it may be the key). */
export function parseOptions<T extends z.ZodType>(schema: T, options: unknown, who: string): z.output<T> {
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new KiwiError('INVALID_INPUT', `${who}: invalid option ${issue?.path.join('.') || '(options)'}: ${issue?.message ?? 'invalid'}`);
}

/** The first problem zod found, as `path: message`. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue === undefined ? 'invalid' : `${issue.path.join('.') || '(root)'}: ${issue.message}`;
}

/** `base` with `suffix` appended to its path, unless the path already ends with it. Query strings are kept. */
export function endpointUrl(base: string, suffix: string, who: string): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new KiwiError('INVALID_INPUT', `${who}: baseUrl "${base.slice(0, 200)}" is not an absolute URL; give e.g. http://127.0.0.1:8080/v1`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new KiwiError('INVALID_INPUT', `${who}: baseUrl must be http: or https:, not ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw new KiwiError('INVALID_INPUT', `${who}: baseUrl must not carry credentials; pass the key as apiKey`);
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith(suffix)) url.pathname = `${path}${suffix}`;
  return url;
}

const messageSchema = z.strictObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  toolCallId: z.string().min(1).max(512).optional(),
  isError: z.boolean().optional(),
  toolCalls: z.array(z.strictObject({ id: z.string().min(1).max(512), name: z.string().min(1).max(256), arguments: z.string() })).max(MAX_NATIVE_CALLS).optional(),
  name: z.string().min(1).max(256).optional(),
});

const requestSchema = z.strictObject({
  model: z.string().min(1).max(512),
  messages: z.array(messageSchema).min(1, 'give at least one message'),
  maxTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  stop: z.array(z.string().min(1)).max(16).optional(),
  clientTools: z
    .strictObject({
      tools: z.array(
        z.strictObject({
          name: z.string(),
          description: z.string().optional(),
          parameters: z.custom<Record<string, unknown>>(isPlainObject, 'must be a JSON Schema object'),
          strict: z.boolean().optional(),
        }),
      ),
      choice: z
        .discriminatedUnion('type', [
          z.strictObject({ type: z.literal('auto') }),
          z.strictObject({ type: z.literal('none') }),
          z.strictObject({ type: z.literal('required') }),
          z.strictObject({ type: z.literal('tool'), name: z.string() }),
        ])
        .optional(),
      parallel: z.boolean().optional(),
    })
    .optional(),
  sideRequest: z.boolean().optional(),
  extra: z.custom<Record<string, unknown>>(isPlainObject, 'must be a plain object (the client body)').optional(),
});

const TOOL_PATHS = {
  tools: 'clientTools.tools',
  name: (i: number) => `clientTools.tools.${i}.name`,
  parameters: (i: number) => `clientTools.tools.${i}.parameters`,
  choice: 'clientTools.choice',
};

export interface CheckedRequest {
  model: string;
  messages: ChatMessage[];
  maxTokens: number | undefined;
  temperature: number | undefined;
  stop: string[] | undefined;
  /** Absent when the client sent none (an empty list included). */
  clientTools: ClientTools | undefined;
  sideRequest: boolean;
  extra: Record<string, unknown>;
}

/**
 * Validates a ChatRequest. `extra` is copied by spread, never through zod's record parser, so a
 * client key such as "__proto__" stays an own data property instead of touching a prototype.
 */
export function checkRequest(request: ChatRequest, who: string): CheckedRequest {
  const parsed = requestSchema.safeParse(request);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KiwiError('INVALID_INPUT', `${who}: invalid chat request: ${issue?.path.join('.') || '(request)'}: ${issue?.message ?? 'invalid'}`);
  }
  const r = parsed.data;
  const tools = r.clientTools;
  const problem = tools === undefined ? undefined : clientToolsProblem(tools, TOOL_PATHS);
  if (problem !== undefined) throw new KiwiError('INVALID_INPUT', `${who}: invalid chat request: ${problem.path} ${problem.problem}`);
  const clientTools = tools === undefined || tools.tools.length === 0 ? undefined : tools;
  return { model: r.model, messages: r.messages, maxTokens: r.maxTokens, temperature: r.temperature, stop: r.stop, clientTools, sideRequest: r.sideRequest === true, extra: { ...(request.extra ?? {}) } };
}

/** The client's fields minus those the adapter owns. */
export function passThrough(extra: Record<string, unknown>, owned: readonly string[]): Record<string, unknown> {
  const out = { ...extra };
  for (const key of owned) delete out[key];
  return out;
}

export interface HttpHandle {
  http: HttpClient;
  close(): Promise<void>;
  /** Throws INTERNAL once closed. */
  check(who: string): void;
}

/** The provider's HTTP client: the injected one (left open on close) or its own. */
export function httpHandle(injected: HttpClient | undefined): HttpHandle {
  const http = injected ?? createHttpClient();
  let closed = false;
  let closing: Promise<void> | undefined;
  return {
    http,
    check(who) {
      if (closed) throw new KiwiError('INTERNAL', `${who}: this provider was closed; create a new one`);
    },
    close() {
      closed = true;
      closing ??= injected === undefined ? http.close() : Promise.resolve();
      return closing;
    },
  };
}
