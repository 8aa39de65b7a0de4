import { isKiwiError, KiwiError } from '../base/errors.js';

/**
 * Turns what an upstream LLM API said went wrong into one UPSTREAM_HTTP error the gateway can
 * map to its own client's protocol: `details.status` (the upstream status), `details.type` (the
 * provider's error type) and the provider's own message. The API key is redacted from every
 * message and detail, because some servers echo the key they refused.
 */

export interface UpstreamContext {
  provider: 'openai' | 'anthropic';
  /** e.g. `OpenAI-compatible upstream 127.0.0.1:8080 (model gpt-4o-mini)`. */
  label: string;
  /** Origin and path of the endpoint, never the query. */
  url: string;
  model: string;
  redact(text: string): string;
}

const EXCERPT_CHARS = 500;

/**
 * The HTTP status each documented error type stands for, so an error that arrives inside a 200
 * stream can still be mapped like a status (Anthropic's table; OpenAI's types and codes).
 */
const TYPE_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  invalid_api_key: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  tokens: 429,
  requests: 429,
  api_error: 500,
  server_error: 500,
  overloaded_error: 529,
};

export function createRedactor(apiKey: string | undefined): (text: string) => string {
  if (apiKey === undefined || apiKey === '') return (text) => text;
  return (text) => text.replaceAll(apiKey, '[redacted]');
}

export function excerpt(text: string, redact: (text: string) => string, max = EXCERPT_CHARS): string {
  // Trailing punctuation goes: the excerpt is followed by "; what to do".
  const flat = redact(text).replace(/\s+/g, ' ').replace(/[\s.;]+$/, '').trim();
  if (flat === '') return '(empty body)';
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

interface ProviderError {
  type: string | undefined;
  code: string | undefined;
  message: string | undefined;
  requestId: string | undefined;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);

/**
 * Reads the error shapes upstreams use: OpenAI `{error:{message,type,code}}`, Anthropic
 * `{type:'error', error:{type,message}, request_id}`, vLLM's flat `{object:'error', message, type}`
 * and servers that send `{error: "text"}`. Undefined when the value is none of them.
 */
export function readProviderError(value: unknown): ProviderError | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const requestId = str(v.request_id);
  if (typeof v.error === 'string') return v.error === '' ? undefined : { type: undefined, code: undefined, message: v.error, requestId };
  if (typeof v.error === 'object' && v.error !== null) {
    const e = v.error as Record<string, unknown>;
    return { type: str(e.type), code: str(e.code), message: str(e.message), requestId };
  }
  if (v.object === 'error' || v.type === 'error') return { type: str(v.type) === 'error' ? undefined : str(v.type), code: str(v.code), message: str(v.message), requestId };
  return undefined;
}

function parseBody(body: string): ProviderError | undefined {
  try {
    return readProviderError(JSON.parse(body));
  } catch {
    return undefined;
  }
}

function hint(status: number): string {
  if (status === 401 || status === 403) return 'check the API key (apiKey) and its permissions';
  if (status === 404) return 'check baseUrl and the model name';
  if (status === 413) return 'the request is too large; send fewer or shorter messages';
  if (status === 429) return 'the upstream is rate limiting or out of quota; retry later or lower the request rate';
  if (status >= 300 && status <= 399) return 'redirects are not followed, so the API key never goes to another host; give the final URL as baseUrl';
  if (status >= 400 && status <= 499) return 'the upstream refused the request; fix what its message names';
  return 'the upstream failed or is overloaded; retry later';
}

/** The error for a non-2xx answer; `body` is the response body (or the excerpt of it the HTTP client kept). */
export function statusError(ctx: UpstreamContext, status: number, body: string, extra: Record<string, unknown> = {}): KiwiError {
  const parsed = parseBody(body);
  const said = parsed?.message !== undefined ? excerpt(parsed.message, ctx.redact) : excerpt(body, ctx.redact);
  const kind = parsed?.type ?? parsed?.code;
  const message = `${ctx.label} answered ${status}${kind === undefined ? '' : ` ${kind}`}: ${said}; ${hint(status)}`;
  return new KiwiError('UPSTREAM_HTTP', message, {
    details: {
      status,
      provider: ctx.provider,
      type: parsed?.type,
      code: parsed?.code,
      message: parsed?.message === undefined ? undefined : ctx.redact(parsed.message),
      requestId: parsed?.requestId,
      url: ctx.url,
      model: ctx.model,
      ...extra,
    },
  });
}

/** The error for an `error` the upstream sent inside a stream that had started with 200. */
export function midStreamError(ctx: UpstreamContext, error: ProviderError, chunk: number): KiwiError {
  const kind = error.type ?? error.code;
  const status = (kind === undefined ? undefined : TYPE_STATUS[kind]) ?? (error.code === undefined ? undefined : TYPE_STATUS[error.code]) ?? 500;
  const said = error.message === undefined ? '(no message)' : excerpt(error.message, ctx.redact);
  const message = `${ctx.label} sent an error in the middle of the stream (event ${chunk})${kind === undefined ? '' : `, ${kind}`}: ${said}; ${hint(status)}`;
  return new KiwiError('UPSTREAM_HTTP', message, {
    details: {
      status,
      midStream: true,
      provider: ctx.provider,
      type: error.type,
      code: error.code,
      message: error.message === undefined ? undefined : ctx.redact(error.message),
      requestId: error.requestId,
      url: ctx.url,
      model: ctx.model,
    },
  });
}

/** The error for a non-streamed answer whose tool calls do not hold together: refused, never half handed on. */
export function malformedAnswer(ctx: UpstreamContext, problem: string): KiwiError {
  return new KiwiError(
    'UPSTREAM_HTTP',
    `${ctx.label}: the answer ${problem}; the upstream sent a broken answer: retry, or check that baseUrl points at ${ctx.provider === 'openai' ? 'an OpenAI-compatible' : 'the Anthropic Messages'} API`,
    { details: { status: 502, malformed: true, provider: ctx.provider, url: ctx.url, model: ctx.model } },
  );
}

/** The error for a chunk that is not JSON or does not have the shape the provider documents. */
export function malformedChunk(ctx: UpstreamContext, chunk: number, problem: string, data: string): KiwiError {
  const shown = excerpt(data, ctx.redact, 200);
  return new KiwiError(
    'UPSTREAM_HTTP',
    `${ctx.label}: event ${chunk} of the stream ${problem}: ${shown}; the upstream sent a broken chunk: retry, or check that baseUrl points at ${ctx.provider === 'openai' ? 'an OpenAI-compatible' : 'the Anthropic Messages'} API`,
    { details: { status: 502, malformed: true, chunk, data: shown, provider: ctx.provider, url: ctx.url, model: ctx.model } },
  );
}

/** Copies a KiwiError with the key redacted from its message and string details. */
function redacted(error: KiwiError, redact: (text: string) => string, prefix: string): KiwiError {
  const message = redact(error.message);
  const details = error.details === undefined ? undefined : Object.fromEntries(Object.entries(error.details).map(([k, v]) => [k, typeof v === 'string' ? redact(v) : v]));
  return new KiwiError(error.code, message.startsWith(prefix) ? message : `${prefix}: ${message}`, { cause: error, ...(details === undefined ? {} : { details }) });
}

/**
 * Maps what the HTTP client threw: a non-2xx answer becomes a statusError with the provider's
 * message; timeouts, cancellation and size caps keep their codes; everything gets the label and redaction.
 */
export function fromHttpError(ctx: UpstreamContext, error: unknown): unknown {
  if (!isKiwiError(error)) return error;
  if (error.details?.malformed === true || error.details?.midStream === true) return error;
  const status = error.details?.status;
  if (isKiwiError(error, 'UPSTREAM_HTTP') && typeof status === 'number' && (status < 200 || status > 299)) {
    const { body, retryAfter, retryAfterMs } = error.details ?? {};
    const retry = { ...(typeof retryAfter === 'string' ? { retryAfter } : {}), ...(typeof retryAfterMs === 'string' ? { retryAfterMs } : {}) };
    return statusError(ctx, status, typeof body === 'string' ? body : '', retry);
  }
  return redacted(error, ctx.redact, ctx.label);
}
