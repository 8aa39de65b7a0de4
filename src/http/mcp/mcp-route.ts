/**
 * `/mcp`: the meta-tool server over MCP Streamable HTTP, in both protocols. A request of
 * 2026-07-28 (its `_meta` names the protocol, the client and its capabilities) is served with no
 * session by a fresh server (the SDK's `createMcpHandler`); any replica can answer it. A request
 * of 2025-06-18 goes to its session (mcp-legacy-sessions.ts). Before either sees a request, this
 * route checks the Origin (DNS-rebinding protection: a web page must not drive a local gateway)
 * and reads the body under its cap.
 */
import { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import type { Context } from 'hono';
import { describeError, isKiwiError, KiwiError } from '../../base/errors.js';
import { LOCAL_CALLER } from '../../clients/client-auth.js';
import { createMetaServer, type MetaServerDeps } from '../../mcp-server/meta-server.js';
import type { McpSessionDirectory } from '../../shared-state/mcp-sessions.js';
import type { Caller } from '../../policy/caller.js';
import { createLegacySessions, SESSION_HEADER } from './mcp-legacy-sessions.js';
import { rpcError } from './mcp-rpc-error.js';
import { DEFAULT_MAX_BODY_BYTES, readJsonBody } from '../server/read-json-body.js';
import { DEFAULT_ALLOWED_HOSTS, originAccepted } from '../server/request-guard.js';
import { toolListingOf } from './tool-listing-query.js';

export interface McpRouteOptions {
  /** Origins a browser may call from: exact origins, or `scheme://host:*` for any port. Default: 127.0.0.1 and localhost, any port. */
  allowedOrigins?: string[];
  /** The gateway's names (`allowed_hosts`): a page of its own origin on one of them may call. Default: localhost, 127.0.0.1, [::1]. */
  allowedHosts?: readonly string[];
  /** Largest POST body (default 4 MiB). */
  maxBodyBytes?: number;
  /** 2025 sessions open at once (default 64); when all are open, an idle one of the client holding the most is closed for a new one. */
  maxSessions?: number;
  /** 2025 sessions one client may hold at once (default 16), so one client cannot take every session. */
  maxSessionsPerClient?: number;
  /** A 2025 session with no request and no open stream for this long is closed (default 30 min). */
  idleTimeoutMs?: number;
  /** The client a request was admitted for (the gateway's request guard); default: everyone is the local client. */
  callerOf?: (request: Request) => Caller | undefined;
  /** Where replicas find each other's 2025 sessions (Redis); default: a session lives where it was opened. */
  directory?: McpSessionDirectory;
}

export interface McpRoute {
  handle(c: Context): Promise<Response>;
  /** Closes every session and request in flight (running tool calls are cancelled); later requests get 503. */
  close(): Promise<void>;
  /** 2025 sessions open now. */
  stats(): { sessions: number };
}

const DEFAULT_ORIGINS = ['http://127.0.0.1:*', 'http://localhost:*'];

export function createMcpRoute(deps: MetaServerDeps, options: McpRouteOptions = {}): McpRoute {
  const allowedOrigins = options.allowedOrigins ?? DEFAULT_ORIGINS;
  const allowedHosts = options.allowedHosts ?? DEFAULT_ALLOWED_HOSTS;
  const maxBodyBytes = positive(options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes');
  const callerOf = (request: Request): Caller => options.callerOf?.(request) ?? LOCAL_CALLER;
  const legacy = createLegacySessions(deps, {
    maxBodyBytes,
    maxSessions: positive(options.maxSessions, 64, 'maxSessions'),
    maxSessionsPerClient: positive(options.maxSessionsPerClient, 16, 'maxSessionsPerClient'),
    idleTimeoutMs: positive(options.idleTimeoutMs, 30 * 60_000, 'idleTimeoutMs'),
    callerOf,
    ...(options.directory ? { directory: options.directory } : {}),
  });
  // 2025 traffic never reaches this handler (`reject`): it has its sessions above.
  const modern = createMcpHandler(
    ({ requestInfo }) => {
      const caller = requestInfo === undefined ? LOCAL_CALLER : callerOf(requestInfo);
      // No session: the client's calls are audited and loop-checked under one conversation of its own.
      const listing = requestInfo === undefined ? undefined : toolListingOf(requestInfo.url);
      return createMetaServer({ ...deps, era: 'modern', session: deps.session ?? `mcp-${caller.client}`, caller, ...(listing ? { listing } : {}) });
    },
    { legacy: 'reject', maxRequestBodySize: maxBodyBytes },
  );
  let closing = false;

  async function handle(c: Context): Promise<Response> {
    const request = c.req.raw;
    if (closing) return rpcError(503, 'The gateway is shutting down; reconnect when it is back');
    const origin = request.headers.get('origin');
    if (origin !== null && !originAccepted(origin, { host: request.headers.get('host') ?? new URL(request.url).host, allowedHosts, allowedOrigins })) {
      return rpcError(403, `Origin ${JSON.stringify(origin.slice(0, 200))} may not call this gateway (DNS-rebinding protection); allowed: ${allowedOrigins.join(', ')}. Add it to the gateway's allowed origins if it is yours.`);
    }
    try {
      toolListingOf(request.url);
    } catch (error) {
      return rpcError(400, `${error instanceof Error ? error.message : String(error)} (the /mcp URL's query)`);
    }
    if (!['POST', 'GET', 'DELETE'].includes(request.method)) {
      return rpcError(405, `HTTP ${request.method} is not part of MCP Streamable HTTP; use POST, GET or DELETE`, { Allow: 'GET, POST, DELETE' });
    }
    let parsedBody: unknown;
    if (request.method === 'POST') {
      try {
        parsedBody = await readJsonBody(c, maxBodyBytes);
      } catch (error) {
        return bodyError(error);
      }
    }
    // A session id belongs to the 2025 protocol whatever else the request says: its owner check decides.
    if (request.headers.has(SESSION_HEADER) || (await isLegacyRequest(request, parsedBody, { maxRequestBodySize: maxBodyBytes }))) {
      return legacy.handle(request, parsedBody);
    }
    return modern.fetch(request, parsedBody === undefined ? {} : { parsedBody });
  }

  async function close(): Promise<void> {
    closing = true;
    await Promise.allSettled([legacy.close(), modern.close()]);
  }

  return { handle, close, stats: () => ({ sessions: legacy.size() }) };
}

function bodyError(error: unknown): Response {
  if (isKiwiError(error, 'PAYLOAD_TOO_LARGE')) return rpcError(413, error.message);
  if (isKiwiError(error, 'REQUEST_TIMEOUT')) return rpcError(408, error.message);
  if (isKiwiError(error, 'INVALID_INPUT')) {
    const status = error.details?.['status'] === 415 ? 415 : 400;
    return rpcError(status, error.message, {}, status === 400 ? -32700 : -32000);
  }
  return rpcError(400, `The request body could not be read (${describeError(error)}); send it again`);
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new KiwiError('INVALID_INPUT', `MCP route option ${name} must be a positive whole number, got ${String(value)}`);
  return value;
}
