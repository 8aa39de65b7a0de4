import { Agent, type Dispatcher } from 'undici';
import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { createAddressGuard, type AddressGuard } from './address-guard.js';
import { decoderFor, discard, excerpt, flattenHeaders, readUpTo, release } from './http-response-body.js';
import { retryHeaders } from './retry-headers.js';
import { createSseDecoder, DEFAULT_MAX_EVENT_BYTES, type SseEvent } from './sse-parser.js';

/**
 * The `http_client` primitive: one HTTP request over undici with per-phase timeouts, a response
 * size cap enforced while the body streams, cancellation, and redirects followed by hand so that
 * every hop passes the scheme check, the caller's `checkUrl` and, for a request that asks for it,
 * the address guard (address-guard.ts) again.
 */

export interface HttpRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Default 10_000. Ignored when the client was given its own dispatcher (that dispatcher's setting applies). */
  connectTimeoutMs?: number;
  /** Time allowed for the complete response headers after the request is sent; default 30_000. */
  headersTimeoutMs?: number;
  /** Longest idle time between body chunks; default 30_000. */
  bodyTimeoutMs?: number;
  /** request(): cap on the body, default 10 MiB. stream(): cap on the whole stream, none by default (long LLM streams are normal). */
  maxResponseBytes?: number;
  /** Default 5; 0 = don't follow (a 3xx comes back as the response). */
  maxRedirects?: number;
  /** Called for the first URL and again for every redirect target; return a reason string to refuse. */
  checkUrl?: (url: URL) => string | null;
  /**
   * Set when someone other than the project's author may choose where the request goes (an
   * agent's arguments, a server's redirect): every hop whose host (with its port) is not
   * `authorHost` goes only to addresses the client's address guard accepts.
   */
  guard?: { authorHost?: string };
  /** stream() only: cap on one SSE event, default 1 MiB. */
  maxEventBytes?: number;
  /**
   * stream() only: called once the answer is a 2xx event stream, before any event arrives. A
   * stream that is quiet until something happens (a job queue's) is connected long before its
   * first event, and its consumer may need to know.
   */
  onOpen?: () => void;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Decoded with the charset of Content-Type (UTF-8 when absent or unknown). */
  body: string;
  /** The final URL, after redirects. */
  url: string;
}

export interface HttpClient {
  /** Any status is a normal response; the caller decides what a 4xx/5xx means. */
  request(req: HttpRequest): Promise<HttpResponse>;
  /**
   * Events of a `text/event-stream` response, in batches: the events one socket read completed,
   * so a consumer pays its per-step costs per read rather than per event. Throws UPSTREAM_HTTP
   * (status + body excerpt) on non-2xx.
   */
  stream(req: HttpRequest): AsyncIterable<SseEvent[]>;
  /** Closes the client's own connection pools (not an injected dispatcher). */
  close(): Promise<void>;
}

const MiB = 1024 * 1024;
/** How long, and how much, a stream whose consumer stopped may still be read to keep its connection (release()). */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);
// Credentials must not follow a redirect to another origin (the fetch standard's rule).
const CROSS_ORIGIN_STRIPPED = ['authorization', 'cookie', 'proxy-authorization'];
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
const REDIRECT_BODY_DRAIN_BYTES = 64 * 1024;

const timeoutMs = z.number().int().positive().max(2 ** 31 - 1);
const requestSchema = z.object({
  method: z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/, 'must be an HTTP token such as GET or POST'),
  url: z.string().min(1).max(16_384),
  headers: z.record(z.string(), z.string()).optional(),
  connectTimeoutMs: timeoutMs.optional(),
  headersTimeoutMs: timeoutMs.optional(),
  bodyTimeoutMs: timeoutMs.optional(),
  maxResponseBytes: z.number().int().positive().optional(),
  maxRedirects: z.number().int().min(0).max(20).optional(),
  maxEventBytes: z.number().int().positive().optional(),
  guard: z.strictObject({ authorHost: z.string().min(1).optional() }).optional(),
});

type Plan = Omit<HttpRequest, 'url' | 'headers' | 'maxResponseBytes'> &
  Required<Pick<HttpRequest, 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs' | 'maxRedirects' | 'maxEventBytes'>> & {
    url: URL;
    headers: Record<string, string>;
    maxResponseBytes: number | undefined;
  };

type Response = Dispatcher.ResponseData;
type Phase = 'request' | 'body';

/** Origin and path only: query strings often carry API keys, and messages end up in logs. */
function shown(url: URL): string {
  return `${url.origin}${url.pathname}${url.search === '' ? '' : '?…'}`;
}

/** The scheme and credential rules every hop must pass; returns why a URL is refused, or null. */
function schemeProblem(url: URL): string | null {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return `only http: and https: URLs are allowed, not ${url.protocol}`;
  }
  if (url.username !== '' || url.password !== '') {
    return 'URLs with credentials (user:password@) are refused; send them in an Authorization header instead';
  }
  return null;
}

function plan(req: HttpRequest, stream: boolean): Plan {
  const parsed = requestSchema.safeParse(req);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? 'request' : issue.path.join('.') || 'request';
    throw new KiwiError('INVALID_INPUT', `invalid HTTP request: ${where}: ${issue?.message ?? 'malformed'}`);
  }
  const input = parsed.data;
  const method = input.method.toUpperCase();
  if (FORBIDDEN_METHODS.has(method)) throw new KiwiError('INVALID_INPUT', `HTTP method ${method} is not allowed; use GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS`);
  if (req.body !== undefined && typeof req.body !== 'string' && !(req.body instanceof Uint8Array)) {
    throw new KiwiError('INVALID_INPUT', 'HTTP request body must be a string or a Uint8Array; serialise objects with JSON.stringify first');
  }
  if (req.body !== undefined && (method === 'GET' || method === 'HEAD')) {
    throw new KiwiError('INVALID_INPUT', `a ${method} request cannot carry a body; use POST or PUT, or move the data into the query string`);
  }
  if (req.checkUrl !== undefined && typeof req.checkUrl !== 'function') throw new KiwiError('INVALID_INPUT', 'checkUrl must be a function');
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw new KiwiError('INVALID_INPUT', `"${input.url.slice(0, 200)}" is not an absolute URL; give the full http:// or https:// address`);
  }
  const problem = schemeProblem(url);
  if (problem !== null) throw new KiwiError('INVALID_INPUT', `refused ${url.protocol} URL: ${problem}`);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {})) headers[name.toLowerCase()] = value;
  if (stream && headers.accept === undefined) headers.accept = 'text/event-stream';
  return {
    ...req,
    method,
    url,
    headers,
    connectTimeoutMs: input.connectTimeoutMs ?? 10_000,
    headersTimeoutMs: input.headersTimeoutMs ?? 30_000,
    bodyTimeoutMs: input.bodyTimeoutMs ?? 30_000,
    maxResponseBytes: input.maxResponseBytes ?? (stream ? undefined : 10 * MiB),
    maxRedirects: input.maxRedirects ?? 5,
    maxEventBytes: input.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES,
  };
}

function errorCode(error: unknown): unknown {
  const direct = (error as { code?: unknown } | null)?.code;
  if (direct !== undefined) return direct;
  // autoSelectFamily reports a failed connect to several addresses as an AggregateError.
  if (error instanceof AggregateError) return (error.errors[0] as { code?: unknown } | undefined)?.code;
  return undefined;
}

const TIMEOUTS: Record<string, { phase: 'connect' | 'headers' | 'body'; option: 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs'; what: string }> = {
  UND_ERR_CONNECT_TIMEOUT: { phase: 'connect', option: 'connectTimeoutMs', what: 'could not connect to the host within' },
  UND_ERR_HEADERS_TIMEOUT: { phase: 'headers', option: 'headersTimeoutMs', what: 'got no complete response headers within' },
  UND_ERR_BODY_TIMEOUT: { phase: 'body', option: 'bodyTimeoutMs', what: 'got no body data for' },
};

/** Turns whatever undici or the socket threw into a KiwiError that names the phase and host. */
function toKiwiError(error: unknown, p: Plan, url: URL, phase: Phase): KiwiError {
  if (error instanceof KiwiError) return error;
  const what = `${p.method} ${shown(url)}`;
  const details: Record<string, unknown> = { url: shown(url), method: p.method };
  if (p.signal?.aborted) return new KiwiError('TOOL_CANCELLED', `${what} was cancelled`, { cause: error, details });
  const code = errorCode(error);
  const timeout = typeof code === 'string' ? TIMEOUTS[code] : undefined;
  if (timeout !== undefined) {
    const ms = p[timeout.option];
    const message = `${what} ${timeout.what} ${ms} ms (${timeout.phase} timeout, host ${url.host}); check that the server is up and responsive, or raise ${timeout.option}`;
    return new KiwiError('HTTP_TIMEOUT', message, { cause: error, details: { ...details, phase: timeout.phase, timeoutMs: ms } });
  }
  const reason = error instanceof Error ? error.message : String(error);
  let message: string;
  if (code === 'ECONNREFUSED') message = `connection to ${url.host} was refused; check the URL and that the server is running`;
  else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') message = `could not resolve host ${url.hostname}; check the URL`;
  else if (code === 'UND_ERR_INVALID_ARG') return new KiwiError('INVALID_INPUT', `${what}: invalid request: ${reason}`, { cause: error, details });
  else message = `the connection to ${url.host} failed ${phase === 'body' ? 'while reading the response body' : 'before a response arrived'}: ${reason}`;
  return new KiwiError('UPSTREAM_HTTP', `${what}: ${message}`, { cause: error, details });
}

function tooLarge(p: Plan, url: URL, detail: string): KiwiError {
  return new KiwiError(
    'OUTPUT_TOO_LARGE',
    `${p.method} ${shown(url)}: the response ${detail}, over the ${String(p.maxResponseBytes)}-byte cap (maxResponseBytes); raise maxResponseBytes or ask for less (a page or range)`,
    { details: { url: shown(url), maxResponseBytes: p.maxResponseBytes } },
  );
}

export interface HttpClientOptions {
  /** Serves every hop the address guard does not (see HttpRequest.guard). */
  dispatcher?: Dispatcher;
  /** Checks the hops of guarded requests; default a guard that allows no private address. The caller closes the one it gives. */
  addressGuard?: AddressGuard;
}

export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  // undici sets the connect timeout per pool, so each distinct value gets its own Agent; in
  // practice that is one Agent per client, and connections are reused across requests.
  const agents = new Map<number, Agent>();
  let ownGuard: AddressGuard | undefined;
  let closed = false;

  function guardFor(p: Plan, url: URL): AddressGuard | undefined {
    if (p.guard === undefined || url.host === p.guard.authorHost) return undefined;
    return options.addressGuard ?? (ownGuard ??= createAddressGuard());
  }

  function dispatcherFor(p: Plan, url: URL): Dispatcher {
    // A guarded hop never uses a connection opened without the guard, nor an injected dispatcher.
    const guard = guardFor(p, url);
    if (guard !== undefined) return guard.agent(p.connectTimeoutMs);
    if (options.dispatcher !== undefined) return options.dispatcher;
    let agent = agents.get(p.connectTimeoutMs);
    if (agent === undefined) {
      agent = new Agent({ connect: { timeout: p.connectTimeoutMs } });
      agents.set(p.connectTimeoutMs, agent);
    }
    return agent;
  }

  /** `chain`: the hops before `url`. */
  function refused(p: Plan, url: URL, chain: URL[], reason: string, details?: Record<string, unknown>): KiwiError {
    const via = chain.length > 0 ? ` (redirected from ${chain.map(shown).join(' → ')})` : '';
    return new KiwiError('POLICY_DENIED', `${p.method} ${shown(url)} was refused${via}: ${reason}`, {
      details: { ...details, url: shown(url), reason, chain: chain.map(shown) },
    });
  }

  function refuse(p: Plan, url: URL, chain: URL[]): void {
    const reason = p.checkUrl?.(url) ?? guardFor(p, url)?.checkLiteral(url) ?? null;
    if (reason !== null) throw refused(p, url, chain, reason);
  }

  /** Sends the request, following redirects; returns the final response with its body unread. */
  async function open(p: Plan): Promise<{ res: Response; url: URL }> {
    if (closed) throw new KiwiError('INTERNAL', 'this HTTP client was closed; create a new one');
    throwIfAborted(p.signal, `${p.method} ${shown(p.url)}`);
    refuse(p, p.url, []);
    let { url, method, body } = p;
    let headers = { ...p.headers };
    const chain: URL[] = [url];
    const visited = new Set([`${method} ${url.href}`]);
    for (;;) {
      let res: Response;
      try {
        res = await dispatcherFor(p, url).request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method,
          headers,
          body: body ?? null,
          signal: p.signal ?? null,
          headersTimeout: p.headersTimeoutMs,
          bodyTimeout: p.bodyTimeoutMs,
        });
      } catch (error) {
        // The guard refused the address a name resolved to, as the connection was opened.
        if (error instanceof KiwiError && error.code === 'POLICY_DENIED') throw refused(p, url, chain.slice(0, -1), error.message, error.details);
        throw toKiwiError(error, p, url, 'request');
      }
      const location = res.headers.location;
      if (!REDIRECT_STATUSES.has(res.statusCode) || p.maxRedirects === 0 || location === undefined) return { res, url };
      // Drained (up to a limit) rather than destroyed, so a small redirect body keeps the connection reusable.
      await res.body.dump({ limit: REDIRECT_BODY_DRAIN_BYTES }).catch(() => undefined);
      const hops = chain.map(shown).join(' → ');
      if (typeof location !== 'string') {
        throw new KiwiError('HTTP_REDIRECT', `${shown(url)} answered ${res.statusCode} with several Location headers; the redirect cannot be followed`);
      }
      if (chain.length > p.maxRedirects) {
        throw new KiwiError('HTTP_REDIRECT', `too many redirects (more than ${p.maxRedirects}): ${hops} → …; raise maxRedirects or call the final URL directly`, { details: { chain: chain.map(shown) } });
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new KiwiError('HTTP_REDIRECT', `${shown(url)} redirected to an invalid Location "${location.slice(0, 200)}"`);
      }
      const problem = schemeProblem(next);
      if (problem !== null) {
        throw new KiwiError('HTTP_REDIRECT', `redirect from ${shown(url)} to a ${next.protocol} URL was refused: ${problem}`, { details: { chain: chain.map(shown) } });
      }
      refuse(p, next, chain);
      // 303 always becomes GET; 301/302 turn POST into GET as browsers and fetch do; 307/308 keep both.
      const status = res.statusCode;
      if ((status === 303 && method !== 'HEAD' && method !== 'GET') || ((status === 301 || status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !BODY_HEADERS.includes(name)));
      }
      if (next.origin !== url.origin) {
        headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !CROSS_ORIGIN_STRIPPED.includes(name)));
      }
      const key = `${method} ${next.href}`;
      if (visited.has(key)) {
        throw new KiwiError('HTTP_REDIRECT', `redirect loop: ${hops} → ${shown(next)}; the server keeps redirecting to a URL already visited`, { details: { chain: [...chain, next].map(shown) } });
      }
      visited.add(key);
      chain.push(next);
      url = next;
    }
  }

  async function request(req: HttpRequest): Promise<HttpResponse> {
    const p = plan(req, false);
    const { res, url } = await open(p);
    const cap = p.maxResponseBytes ?? Number.MAX_SAFE_INTEGER;
    const declared = Number(res.headers['content-length']);
    // A HEAD answer declares the length of a body it does not send.
    if (p.method !== 'HEAD' && Number.isFinite(declared) && declared > cap) {
      discard(res);
      throw tooLarge(p, url, `declares ${declared} bytes (Content-Length)`);
    }
    const read = await readUpTo(res, cap).catch((error: unknown) => {
      throw toKiwiError(error, p, url, 'body');
    });
    if (read.over) throw tooLarge(p, url, `passed ${cap} bytes while streaming`);
    const headers = flattenHeaders(res.headers);
    return { status: res.statusCode, headers, body: decoderFor(headers['content-type']).decode(read.data), url: url.href };
  }

  async function* stream(req: HttpRequest): AsyncGenerator<SseEvent[]> {
    const p = plan(req, true);
    const { res, url } = await open(p);
    const contentType = String(res.headers['content-type'] ?? '');
    const ok = res.statusCode >= 200 && res.statusCode <= 299;
    if (!ok || !/^text\/event-stream\s*(;|$)/i.test(contentType)) {
      const body = await excerpt(res);
      const got = ok ? `${contentType ? `Content-Type ${contentType}` : 'no Content-Type'} instead of text/event-stream` : `status ${res.statusCode}`;
      throw new KiwiError('UPSTREAM_HTTP', `${p.method} ${shown(url)}: ${url.host} answered with ${got}: ${body}`, {
        details: { status: res.statusCode, body, url: shown(url), ...retryHeaders(flattenHeaders(res.headers)) },
      });
    }
    p.onOpen?.();
    const cap = p.maxResponseBytes ?? Number.POSITIVE_INFINITY;
    const parser = createSseDecoder({ maxEventBytes: p.maxEventBytes });
    const text = new TextDecoder();
    let total = 0;
    let failed = false;
    // Not destroyed when the consumer stops: see the finally.
    const chunks = res.body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>;
    try {
      for await (const chunk of chunks) {
        total += chunk.length;
        if (total > cap) throw tooLarge(p, url, `stream passed ${cap} bytes`);
        const batch: SseEvent[] = [];
        let overflow: unknown;
        try {
          parser.push(text.decode(chunk, { stream: true }), (event) => batch.push(event));
        } catch (error) {
          overflow = error;
        }
        // Yielding pauses this loop, so a slow consumer applies backpressure to the socket.
        if (batch.length > 0) yield batch;
        if (overflow !== undefined) throw overflow;
      }
    } catch (error) {
      failed = true;
      throw toKiwiError(error, p, url, 'body');
    } finally {
      if (!res.body.readableEnded) {
        if (failed || p.signal?.aborted) discard(res);
        else release(res);
      }
    }
  }

  return {
    request,
    stream,
    async close() {
      closed = true;
      const all = [...agents.values()];
      agents.clear();
      await Promise.all([...all.map((agent) => agent.close()), ownGuard?.close()]);
    },
  };
}
