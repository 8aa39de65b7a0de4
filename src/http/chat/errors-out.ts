import { ERROR_CODES, isKiwiError, toHttpStatus } from '../../base/errors.js';

/**
 * What the HTTP edges tell a client when a request fails: one protocol-neutral description
 * (`ErrorOut`), then each protocol's error body. Only KiwiError messages reach the client; they
 * are written for people and carry no secrets (upstream errors are redacted where they are
 * made). Anything else is a bug, and its message and stack stay on the server.
 */

export type Protocol = 'openai' | 'anthropic';

export interface ErrorOut {
  status: number;
  message: string;
  /** The request field at fault, as `messages[2].content` (OpenAI's `param`). */
  param?: string;
  /** A machine-readable code, as OpenAI's `code` (`model_not_found`). */
  code?: string;
  /** The upstream's own error type, passed through when it speaks the client's protocol. */
  type?: string;
  /** Response headers: an upstream's `Retry-After` and `retry-after-ms`, passed on so the client's SDK waits as told. */
  headers?: Record<string, string>;
}

/** delay-seconds or an IMF-fixdate (RFC 9110 §10.2.3); anything else is not passed on. */
const RETRY_AFTER = /^(?:\d{1,10}|[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)$/;
const RETRY_AFTER_MS = /^\d{1,10}(?:\.\d{1,6})?$/;

function retryAfterHeaders(details: Record<string, unknown>): Record<string, string> | undefined {
  const headers: Record<string, string> = {};
  if (typeof details.retryAfter === 'string' && RETRY_AFTER.test(details.retryAfter)) headers['retry-after'] = details.retryAfter;
  if (typeof details.retryAfterMs === 'string' && RETRY_AFTER_MS.test(details.retryAfterMs)) headers['retry-after-ms'] = details.retryAfterMs;
  return Object.keys(headers).length === 0 ? undefined : headers;
}

const OPENAI_TYPES: Record<number, string> = {
  401: 'authentication_error',
  403: 'permission_error',
  429: 'rate_limit_error',
};

const ANTHROPIC_TYPES: Record<number, string> = {
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Maps a thrown value to what the client sees. UPSTREAM_HTTP keeps the upstream's 4xx status
 * (and its error type when the upstream speaks `protocol`); an upstream 5xx, a broken stream or
 * a redirect is 502, because the fault is behind the gateway, not in the client's request. The
 * upstream's retry hints go with either, so that the client backs off instead of hammering it.
 */
export function toErrorOut(error: unknown, protocol: Protocol, requestId: string): ErrorOut {
  if (!isKiwiError(error)) {
    return { status: 500, message: `The gateway failed on an internal error (request ${requestId}); retry, and report it with the request id if it persists` };
  }
  const details = error.details ?? {};
  const param = text(details.param);
  if (error.code === 'UPSTREAM_HTTP') {
    const status = typeof details.status === 'number' && details.status >= 400 && details.status <= 499 ? details.status : 502;
    const sameProtocol = details.provider === protocol;
    const type = status < 500 && sameProtocol ? text(details.type) : undefined;
    const code = status < 500 && sameProtocol ? text(details.code) : undefined;
    const headers = retryAfterHeaders(details);
    return { status, message: error.message, ...(type === undefined ? {} : { type }), ...(code === undefined ? {} : { code }), ...(headers === undefined ? {} : { headers }) };
  }
  // 415 has no error code of its own: it is an INVALID_INPUT the body reader marks.
  const status = error.code === 'INVALID_INPUT' && details.status === 415 ? 415 : toHttpStatus(error);
  const code = ERROR_CODES[error.code].chat;
  // A budget starts afresh only when its window does: the SDKs must not retry in a few seconds.
  const headers = error.code === 'BUDGET_EXCEEDED' ? { ...retryAfterHeaders(details), 'x-should-retry': 'false' } : undefined;
  return { status, message: error.message, ...(param === undefined ? {} : { param }), ...(code === undefined ? {} : { code }), ...(headers === undefined ? {} : { headers }) };
}

export function openAiErrorType(status: number): string {
  if (status >= 500) return 'server_error';
  return OPENAI_TYPES[status] ?? 'invalid_request_error';
}

export function anthropicErrorType(status: number): string {
  if (status >= 500) return ANTHROPIC_TYPES[status] ?? 'api_error';
  return ANTHROPIC_TYPES[status] ?? 'invalid_request_error';
}

export function openAiErrorBody(out: ErrorOut): { error: { message: string; type: string; param: string | null; code: string | null } } {
  return { error: { message: out.message, type: out.type ?? openAiErrorType(out.status), param: out.param ?? null, code: out.code ?? null } };
}

export function anthropicErrorBody(out: ErrorOut): { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type: out.type ?? anthropicErrorType(out.status), message: out.message } };
}
