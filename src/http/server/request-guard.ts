/**
 * The door every request passes, before any route: the Host must be one of the gateway's own
 * names (a web page that rebinds its DNS name to 127.0.0.1 still sends its own name), a browser
 * Origin must be listed, the caller must be a known client (see clients/client-auth.ts), and a
 * client may have only so many requests running at once. Refusals are answered in the shape the
 * route's clients read: JSON-RPC on /mcp, `{"error", "code"}` on the JSON APIs (/v0, /admin/v1),
 * the OpenAI/Anthropic error object elsewhere.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { ClientAuth } from '../../clients/client-auth.js';
import { clientUseRefusal } from '../../clients/access.js';
import { LOCAL_CALLER } from '../../clients/client-auth.js';
import type { Caller } from '../../policy/caller.js';
import { createMemoryRequestSlots, type RequestSlots, type SlotTake } from '../../clients/request-slots.js';
import { ADMIN_PREFIX } from '../admin/admin-route.js';
import { sentDirectly } from './node-bindings.js';
import { trackBody } from './track-body.js';

export interface RequestGuardOptions {
  /** Host names the gateway answers to, each optionally with `:port`; `*` answers to any (then keys are the only door). */
  allowedHosts: readonly string[];
  /** Browser origins that may call: exact origins, or `scheme://host:*` for any port. */
  allowedOrigins: readonly string[];
  /** Origins that may call /mcp only, besides `allowedOrigins` (gateway.yaml's `mcp.allowed_origins`). */
  mcpOrigins?: readonly string[];
  /** Absent: every request is the local client (embedding apps and tests that do their own auth). */
  auth?: ClientAuth;
  /** Requests one client may have running at once (streams count until they end); default 64. */
  maxConcurrentPerClient?: number;
  /** Where running requests are counted: shared by replicas (Redis); default, this process. */
  slots?: RequestSlots;
}

export interface RequestGuard {
  middleware: MiddlewareHandler;
  /** The client a request was admitted for; undefined on routes that admit anyone (/healthz) when no key came. */
  callerOf(request: Request): Caller | undefined;
  /** Requests running now through this process, per client. */
  running(): Record<string, number>;
}

export const DEFAULT_ALLOWED_HOSTS = ['localhost', '127.0.0.1', '[::1]'];
export const DEFAULT_MAX_CONCURRENT_PER_CLIENT = 64;
/**
 * Liveness probes carry no key; unauthenticated, /healthz says only that the gateway is up. The
 * kernel's two are open by its spec. A browser asks for /favicon.ico on its own, without the
 * console's cookie or any key: the console's icon tells nothing.
 */
const OPEN_PATHS = new Set(['/healthz', '/v0/health', '/v0/ready', '/favicon.ico']);

export function createRequestGuard(options: RequestGuardOptions): RequestGuard {
  const maxConcurrent = options.maxConcurrentPerClient ?? DEFAULT_MAX_CONCURRENT_PER_CLIENT;
  const callers = new WeakMap<Request, Caller>();
  const mcpOrigins = [...options.allowedOrigins, ...(options.mcpOrigins ?? [])];
  const slots = options.slots ?? createMemoryRequestSlots();

  const middleware: MiddlewareHandler = async (c, next) => {
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (!hostAllowed(host, options.allowedHosts)) {
      return refuse(c, 403, 'permission_error', `Host ${JSON.stringify(host.slice(0, 200))} is not a name of this gateway (DNS-rebinding protection); it answers to ${options.allowedHosts.join(', ')}. If clients reach it by this name, add it to \`allowed_hosts\` in .ai/config/gateway.yaml`);
    }
    const origin = c.req.header('origin');
    const origins = c.req.path === '/mcp' ? mcpOrigins : options.allowedOrigins;
    if (origin !== undefined && !originAccepted(origin, { host, allowedHosts: options.allowedHosts, allowedOrigins: origins })) {
      const allowed = origins.length > 0 ? origins.join(', ') : 'none';
      return refuse(c, 403, 'permission_error', `Origin ${JSON.stringify(origin.slice(0, 200))} may not call this gateway (a web page must not drive it); allowed origins: ${allowed}. Add it to \`allowed_origins\` in .ai/config/gateway.yaml if the page is yours`);
    }
    // The console logs people in with a session cookie of its own (console-routes.tsx); the checks above still hold for it.
    if (c.req.path === '/ui' || c.req.path.startsWith('/ui/')) return next();
    const open = OPEN_PATHS.has(c.req.path);
    let caller: Caller = LOCAL_CALLER;
    if (options.auth !== undefined) {
      const result = await options.auth.authenticate({ authorization: c.req.header('authorization'), apiKey: c.req.header('x-api-key') });
      if (!result.ok) {
        if (open) return next();
        const headers = result.status === 401 ? { 'www-authenticate': 'Bearer realm="kiwi-gateway"' } : undefined;
        return refuse(c, result.status, result.status === 401 ? 'authentication_error' : result.status === 403 ? 'permission_error' : 'api_error', result.message, headers);
      }
      caller = result.caller;
    }
    callers.set(c.req.raw, caller);
    if (open) return next();
    // /v0 and the admin API ask clients/access.ts route by route (objects have owners, areas
    // roles: an approver key answers approvals there); the rest is a client's.
    const refusal = isJsonApi(c.req.path) || c.req.path === '/metrics' ? undefined : clientUseRefusal(caller);
    if (refusal !== undefined) return refuse(c, 403, 'permission_error', refusal);

    let slot: SlotTake;
    try {
      slot = await slots.acquire(caller.client, maxConcurrent);
    } catch (error) {
      return refuse(c, 503, 'api_error', `${error instanceof Error ? error.message : String(error)}; requests are refused until it answers again`, { 'retry-after': '1' });
    }
    if (!slot.ok) {
      return refuse(c, 429, 'rate_limit_error', `Client ${caller.client} already has ${slot.running} requests running, the most one client may; wait for one to finish (raise \`limits.max_concurrent_requests_per_client\` in .ai/config/gateway.yaml if this is expected)`, { 'retry-after': '1' });
    }
    const end = slot.release;
    try {
      await next();
    } catch (error) {
      await end();
      throw error;
    }
    // A response the handler wrote to Node itself has ended by now (its handler awaited it): a
    // streamed chat's slot is freed just after its end, so a client's next request may, rarely,
    // reach another replica before that. Any other response ends only once its slot is free.
    if (sentDirectly(c.res) || c.res.body === null) await end();
    else c.res = trackBody(c.res, end);
  };

  return { middleware, callerOf: (request) => callers.get(request), running: () => slots.held() };
}

/** The kernel's API and the admin API: errors as `{"error", "code"}` (json-api.ts), access decided by each route. */
function isJsonApi(path: string): boolean {
  return path.startsWith('/v0/') || path.startsWith(`${ADMIN_PREFIX}/`);
}

/** The kernel's error codes (its §3) for the refusals here. */
const KERNEL_CODES: Record<401 | 403 | 429 | 503, string> = { 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 429: 'RATE_LIMITED', 503: 'SERVICE_UNAVAILABLE' };

/** A host name entry matches any port; `name:port` only that port. Case-insensitive. */
export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const value = host.toLowerCase();
  const name = value.startsWith('[') ? value.slice(0, value.indexOf(']') + 1) : value.replace(/:\d*$/, '');
  return allowed.some((entry) => {
    const e = entry.toLowerCase();
    return e === '*' || e === value || e === name;
  });
}

/**
 * Whether a browser page of `origin` may call: one listed in `allowedOrigins`, or a page of the
 * gateway's own origin (the request's scheme and Host, that Host one of `allowedHosts`). Such a
 * page is no other site: a rebinding page's Host names the attacker's domain, which
 * `allowedHosts` refuses, and a same-origin page could read the answers anyway.
 *
 * Either scheme is the gateway's own, on purpose (issue 39 asked): behind a proxy that ends TLS
 * the page is `https://` while the gateway hears plain http, and many proxies do not say so
 * (nginx sends no X-Forwarded-Proto unless told). An `https://` page at the very host and port
 * the gateway was asked by can only be served by whatever answers TLS there: the gateway itself,
 * through its proxy, as nothing else can listen on its address.
 */
export function originAccepted(origin: string, request: { host: string; allowedHosts: readonly string[]; allowedOrigins: readonly string[] }): boolean {
  return (hostAllowed(request.host, request.allowedHosts) && sameOrigin(origin, request.host)) || originAllowed(origin, request.allowedOrigins);
}

function sameOrigin(origin: string, host: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host === new URL(`${url.protocol}//${host}`).host;
  } catch {
    return false;
  }
}

/** `scheme://host:*` allows that host on any port; anything else must equal the request's origin. */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  // `null` (sandboxed frames, file: pages) parses to an opaque origin: never allowed.
  if (url.origin === 'null') return false;
  const hostOnly = `${url.protocol}//${url.hostname}`;
  return allowed.some((entry) => (entry.endsWith(':*') ? entry.slice(0, -2).toLowerCase() === hostOnly : entry.replace(/\/$/, '').toLowerCase() === url.origin));
}

function refuse(c: Context, status: 401 | 403 | 429 | 503, type: string, message: string, headers?: Record<string, string>): Response {
  const body =
    c.req.path === '/mcp'
      ? { jsonrpc: '2.0', error: { code: -32001, message }, id: null }
      : isJsonApi(c.req.path)
        ? { error: message, code: KERNEL_CODES[status] }
        : // Both SDKs read this: OpenAI's `error.message/type/code`, Anthropic's `type: "error"` + `error.type/message`.
          { type: 'error', error: { type, message, param: null, code: type === 'authentication_error' ? 'invalid_api_key' : null } };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}
