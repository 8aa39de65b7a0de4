import { describeError, isKiwiError, KiwiError, type ErrorCode } from '../base/errors.js';
import { createHttpClient } from '../primitives/http-client.js';
import type { SseEvent } from '../primitives/sse-parser.js';
import { gatewayUrl } from './gateway-address.js';

/**
 * The kernel's v0 API of a running gateway, for the CLI (`kiwi executions`, `kiwi approvals`,
 * `kiwi runner`): JSON in and out, the client key as a bearer token, short timeouts, and the
 * kernel's `{"error", "code"}` answers raised with their message (and the HTTP status in
 * `details.status`, so a caller can tell a refusal from a kernel that is briefly unwell).
 */

export interface KernelClient {
  get(path: string): Promise<unknown>;
  post(path: string, body?: unknown): Promise<unknown>;
  /** A 204 (Rebuno's answer to DELETE /v0/runners/{id}, §7.6) resolves to undefined. */
  delete(path: string): Promise<unknown>;
  /** An SSE stream (§8.1), in the batches one read completed. */
  stream(path: string, options: KernelStreamOptions): AsyncIterable<SseEvent[]>;
  close(): Promise<void>;
}

export interface KernelStreamOptions {
  signal: AbortSignal;
  /** A larger event is refused: the stream ends with OUTPUT_TOO_LARGE. */
  maxEventBytes: number;
  /** The stream is taken for dead after this long without a byte (the kernel's heartbeat is every 5 s). */
  idleMs: number;
  /** Called once the kernel has accepted the stream, before its first event. */
  onOpen?: () => void;
}

/** How the command was told where the kernel is and where its key comes from, for messages. */
export interface KernelClientNames {
  urlFlag: string;
  keyFrom: string;
}

const GATEWAY_NAMES: KernelClientNames = { urlFlag: '--url', keyFrom: '--key or KIWI_API_KEY' };
const TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export function createKernelClient(base: string, key: string | undefined, signal?: AbortSignal, names: KernelClientNames = GATEWAY_NAMES): KernelClient {
  const keyHint = `; pass a client key with ${names.keyFrom}`;
  const root = gatewayUrl(base, keyHint, names.urlFlag);
  const http = createHttpClient();
  const auth: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };

  function unreachable(error: unknown): KiwiError {
    const why = causeOf(error);
    const where = names.urlFlag === '--url' ? '--url (or set KIWI_PORT)' : names.urlFlag;
    return new KiwiError('UPSTREAM_HTTP', `no Kiwi gateway answers at ${root.origin} (${why}); start one with \`kiwi serve\`, or pass ${where} to reach the one that runs`, { cause: error });
  }

  /** A non-2xx answer: the kernel's own message when it sent one (§3). */
  function refused(status: number, body: string, url: string): KiwiError {
    let message = `HTTP ${status}`;
    try {
      const error = (JSON.parse(body) as { error?: unknown } | null)?.error;
      if (typeof error === 'string') message = error;
    } catch {
      throw new KiwiError('UPSTREAM_HTTP', `${url} answered HTTP ${status} without JSON; check that ${names.urlFlag} points at a Kiwi gateway`, { details: { status } });
    }
    const hint = status === 401 ? keyHint : '';
    return new KiwiError(codeFor(status), `${message}${hint}`, { details: { status } });
  }

  async function call(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    const url = new URL(path, root).toString();
    let response;
    try {
      response = await http.request({
        method,
        url,
        headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...auth },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        connectTimeoutMs: TIMEOUT_MS,
        headersTimeoutMs: TIMEOUT_MS,
        bodyTimeoutMs: TIMEOUT_MS,
        maxResponseBytes: MAX_BODY_BYTES,
        maxRedirects: 0,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (isKiwiError(error, 'TOOL_CANCELLED')) throw error;
      throw unreachable(error);
    }
    if (response.status === 204) return undefined;
    if (response.status < 200 || response.status > 299) throw refused(response.status, response.body, url);
    try {
      return JSON.parse(response.body);
    } catch {
      throw new KiwiError('UPSTREAM_HTTP', `${url} answered HTTP ${response.status} without JSON; check that ${names.urlFlag} points at a Kiwi gateway`, { details: { status: response.status } });
    }
  }

  async function* stream(path: string, options: KernelStreamOptions): AsyncGenerator<SseEvent[]> {
    const url = new URL(path, root);
    const shown = `${url.origin}${url.pathname}`;
    let open = false;
    const onOpen = (): void => {
      open = true;
      options.onOpen?.();
    };
    try {
      yield* http.stream({
        method: 'GET',
        url: url.toString(),
        headers: auth,
        connectTimeoutMs: TIMEOUT_MS,
        headersTimeoutMs: TIMEOUT_MS,
        bodyTimeoutMs: options.idleMs,
        maxEventBytes: options.maxEventBytes,
        maxRedirects: 0,
        signal: options.signal,
        onOpen,
      });
    } catch (error) {
      if (!isKiwiError(error) || error.code === 'TOOL_CANCELLED') throw error;
      const status = error.details?.['status'];
      if (typeof status === 'number' && (status < 200 || status > 299)) throw refused(status, String(error.details?.['body'] ?? ''), shown);
      if (typeof status === 'number') throw new KiwiError('UPSTREAM_HTTP', `${shown} answered without an event stream; check that ${names.urlFlag} points at a Kiwi gateway`, { details: { status } });
      if (error.code === 'OUTPUT_TOO_LARGE') throw new KiwiError('OUTPUT_TOO_LARGE', `${shown} sent an event over ${options.maxEventBytes} bytes, more than one job can be; it was refused`);
      if (error.code === 'HTTP_TIMEOUT' && open) throw new KiwiError('HTTP_TIMEOUT', `${shown} sent nothing for ${options.idleMs / 1000} s (a kernel sends a heartbeat every 5)`);
      if (open) throw new KiwiError('UPSTREAM_HTTP', `the stream from ${shown} broke off (${causeOf(error)})`, { cause: error });
      throw unreachable(error);
    }
  }

  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body ?? {}),
    delete: (path) => call('DELETE', path),
    stream,
    close: () => http.close(),
  };
}

/** The socket's error code (ECONNREFUSED, UND_ERR_SOCKET…) when there is one: shorter than the message around it. */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === 'string' ? cause.code : describeError(error);
}

function codeFor(status: number): ErrorCode {
  if (status === 401 || status === 403) return 'UNAUTHORIZED';
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'CONFLICT';
  if (status === 429) return 'RATE_LIMITED';
  if (status >= 500) return 'UPSTREAM_HTTP';
  return 'INVALID_INPUT';
}
