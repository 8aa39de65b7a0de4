import type { z } from 'zod';
import { parseJsonWithin } from '../base/json-depth.js';
import { KiwiError } from '../base/errors.js';
import type { HttpClient, HttpRequest } from '../primitives/http-client.js';
import { retryHeaders } from '../primitives/retry-headers.js';
import { firstIssue } from './provider-options.js';
import { excerpt, fromHttpError, statusError, type UpstreamContext } from './upstream-error.js';

/**
 * The JSON POST both adapters send, streaming or not. No redirect is followed: an API key header
 * must not travel to wherever a Location points.
 */
export function jsonPost(options: {
  url: string;
  body: Record<string, unknown>;
  stream: boolean;
  auth: Record<string, string>;
  timeoutMs: number;
  maxResponseBytes: number;
  signal: AbortSignal | undefined;
}): HttpRequest {
  return {
    method: 'POST',
    url: options.url,
    headers: { 'content-type': 'application/json', accept: options.stream ? 'text/event-stream' : 'application/json', ...options.auth },
    body: JSON.stringify(options.body),
    headersTimeoutMs: options.timeoutMs,
    bodyTimeoutMs: options.timeoutMs,
    maxResponseBytes: options.maxResponseBytes,
    maxRedirects: 0,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
}

/**
 * The non-streaming call both adapters share: one request, a non-2xx answer mapped to the
 * provider's error, and the body checked against the provider's (loose) response schema.
 */
export async function requestJson<T extends z.ZodType>(http: HttpClient, req: HttpRequest, schema: T, what: string, ctx: UpstreamContext): Promise<z.output<T>> {
  let res;
  try {
    res = await http.request(req);
  } catch (error) {
    throw fromHttpError(ctx, error);
  }
  if (res.status < 200 || res.status > 299) {
    throw statusError(ctx, res.status, res.body, retryHeaders(res.headers));
  }
  const details = { status: res.status, provider: ctx.provider, url: ctx.url, model: ctx.model };
  let json: unknown;
  try {
    json = parseJsonWithin(res.body);
  } catch {
    throw new KiwiError('UPSTREAM_HTTP', `${ctx.label} answered ${res.status} with a body that is not JSON: ${excerpt(res.body, ctx.redact, 200)}; check that baseUrl points at the right API`, { details });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new KiwiError('UPSTREAM_HTTP', `${ctx.label} answered with a body that is not ${what} (${firstIssue(parsed.error)}): ${excerpt(res.body, ctx.redact, 200)}`, { details });
  }
  return parsed.data;
}
