/**
 * `/mcp` for 2025-06-18 clients: MCP sessions (`Mcp-Session-Id`). Each session gets its own
 * server and transport (the SDK's web-standard one, which speaks hono's Request/Response); the
 * session header maps a request to a live session of the client that opened it, here or, through
 * the directory the replicas share, one another replica opened. The route (mcp-route.ts) has
 * checked the Origin and read the body before a request reaches these sessions.
 */
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport, type McpServer } from '@modelcontextprotocol/server';
import { ownedBy } from '../../clients/access.js';
import { createMetaServer, type MetaServerDeps } from '../../mcp-server/meta-server.js';
import { LOCAL_MCP_SESSIONS, type McpSessionDirectory, type McpSessionRecord } from '../../shared-state/mcp-sessions.js';
import type { Caller } from '../../policy/caller.js';
import { rpcError } from './mcp-rpc-error.js';
import { trackBody } from '../server/track-body.js';
import type { ToolListing } from '../../mcp-server/project-tools.js';
import { toolListingOf } from './tool-listing-query.js';

export interface LegacySessionsOptions {
  maxBodyBytes: number;
  maxSessions: number;
  maxSessionsPerClient: number;
  idleTimeoutMs: number;
  callerOf(request: Request): Caller;
  directory?: McpSessionDirectory;
}

export interface LegacySessions {
  /** A request of the 2025 protocol: with a session id, on that session; without, an initialize that opens one. */
  handle(request: Request, parsedBody: unknown): Promise<Response>;
  /** Closes every session (running tool calls are cancelled). */
  close(): Promise<void>;
  /** Sessions open now. */
  size(): number;
}

interface Session {
  id: string;
  /** The client that opened it; only that client may use it. */
  caller: Caller;
  server: McpServer;
  transport: WebStandardStreamableHTTPServerTransport;
  /** Requests being handled plus response streams still open. */
  active: number;
  idle: NodeJS.Timeout | undefined;
  /** When its last request or stream ended (ms): the longest idle goes first when room is needed. */
  idleSince: number;
  closed: boolean;
  /** In the directory the replicas share: each request checks it there (a DELETE through another replica ends it). */
  listed: boolean;
}

export const SESSION_HEADER = 'mcp-session-id';
/** The ids sessions get here (randomUUID). */
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function createLegacySessions(deps: MetaServerDeps, options: LegacySessionsOptions): LegacySessions {
  const { maxBodyBytes, maxSessions, maxSessionsPerClient, idleTimeoutMs, callerOf } = options;
  const sessions = new Map<string, Session>();
  const directory = options.directory ?? LOCAL_MCP_SESSIONS;
  /** Sessions being brought up from the directory: a second request of one waits for the first's. */
  const restoring = new Map<string, Promise<Session | undefined>>();

  async function closeSession(session: Session): Promise<void> {
    if (session.closed) return;
    session.closed = true;
    clearTimeout(session.idle);
    sessions.delete(session.id);
    // Closing the server closes its transport, which aborts the handlers still running (and their tool calls).
    await session.server.close().catch(() => undefined);
  }

  function begin(session: Session): () => void {
    session.active++;
    clearTimeout(session.idle);
    session.idle = undefined;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      session.active--;
      if (session.active === 0 && !session.closed) {
        session.idleSince = performance.now();
        session.idle = setTimeout(() => void closeSession(session), idleTimeoutMs);
        // An idle session must not keep the process alive on shutdown.
        session.idle.unref();
      }
    };
  }

  /** Runs one request on a session; a streamed answer keeps the session busy until its stream ends. */
  async function dispatch(session: Session, request: Request, parsedBody: unknown): Promise<Response> {
    const end = begin(session);
    try {
      const response = await session.transport.handleRequest(request, parsedBody === undefined ? undefined : { parsedBody });
      return trackBody(response, end);
    } catch (error) {
      end();
      throw error;
    }
  }

  /**
   * Room for one more session: a client that left sessions idle must not lock every other client
   * out until they expire, so the longest-idle session of the client holding the most is closed.
   * A session in use (a request or a stream open) is never closed; all in use is a 503.
   */
  async function makeRoom(): Promise<boolean> {
    if (sessions.size < maxSessions) return true;
    const held = new Map<string, number>();
    for (const s of sessions.values()) held.set(s.caller.client, (held.get(s.caller.client) ?? 0) + 1);
    const idle = [...sessions.values()].filter((s) => s.active === 0);
    idle.sort((a, b) => (held.get(b.caller.client) ?? 0) - (held.get(a.caller.client) ?? 0) || a.idleSince - b.idleSince);
    const victim = idle[0];
    if (victim === undefined) return false;
    await closeSession(victim);
    return true;
  }

  async function openSession(request: Request, parsedBody: unknown): Promise<Response> {
    const caller = callerOf(request);
    const held = [...sessions.values()].filter((s) => s.caller.client === caller.client).length;
    if (held >= maxSessionsPerClient) {
      return rpcError(429, `Client ${caller.client} already holds ${held} MCP sessions, the most one client may; close one (HTTP DELETE /mcp with its Mcp-Session-Id) or reuse it`, { 'Retry-After': '1' });
    }
    if (!(await makeRoom())) {
      return rpcError(503, `${maxSessions} MCP sessions are open and in use, the most this gateway allows; close one (HTTP DELETE /mcp with its Mcp-Session-Id), or raise maxSessions`);
    }
    const id = randomUUID();
    const session = await newSession(id, caller, toolListingOf(request.url));
    let response: Response;
    try {
      response = await dispatch(session, request, parsedBody);
    } catch (error) {
      await closeSession(session);
      throw error;
    }
    // The transport refused the initialize (a bad Accept header, say): nothing will use this session.
    if (session.transport.sessionId === undefined || !response.ok) {
      await closeSession(session);
      return response;
    }
    // Written down for the other replicas; if Redis cannot take it, the session is served here only.
    const initialize = (Array.isArray(parsedBody) ? parsedBody : [parsedBody]).find((m) => (m as { method?: unknown })?.method === 'initialize');
    session.listed = directory.shared && (await directory.put(id, { client: caller.client, initialize }, idleTimeoutMs).then(() => true, () => false));
    return response;
  }

  async function newSession(id: string, caller: Caller, listing: ToolListing): Promise<Session> {
    const server = createMetaServer({ ...deps, era: 'legacy', session: deps.session ?? `mcp-${id}`, caller, listing });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      maxRequestBodySize: maxBodyBytes,
      onsessionclosed: () => {
        void directory.remove(id).catch(() => undefined);
        void closeSession(session);
      },
    });
    const session: Session = { id, caller, server, transport, active: 0, idle: undefined, idleSince: performance.now(), closed: false, listed: false };
    transport.onclose = () => void closeSession(session);
    sessions.set(id, session);
    try {
      await server.connect(transport);
    } catch (error) {
      await closeSession(session);
      throw error;
    }
    return session;
  }

  /**
   * A session another replica opened: a session of our own with its id, brought to where the
   * client left it by replaying its handshake (its `initialize`, then `notifications/initialized`)
   * through the SDK's transport, whose answers nobody reads.
   */
  async function restoreSession(id: string, record: McpSessionRecord, caller: Caller, listing: ToolListing): Promise<Session | undefined> {
    if (!(await makeRoom())) return undefined;
    const session = await newSession(id, caller, listing);
    const post = async (message: unknown, headers: Record<string, string>): Promise<boolean> => {
      const replayed = new Request('http://replica.invalid/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(message) });
      const answer = await session.transport.handleRequest(replayed, { parsedBody: message });
      await answer.text();
      return answer.ok;
    };
    try {
      const version = (record.initialize as { params?: { protocolVersion?: unknown } } | undefined)?.params?.protocolVersion;
      const versionHeader: Record<string, string> = typeof version === 'string' ? { 'mcp-protocol-version': version } : {};
      if ((await post(record.initialize, {})) && (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { [SESSION_HEADER]: id, ...versionHeader }))) {
        session.listed = true;
        return session;
      }
    } catch {
      // an initialize this SDK refuses: as if the session were unknown
    }
    await closeSession(session);
    return undefined;
  }

  async function handle(request: Request, parsedBody: unknown): Promise<Response> {
    const sessionId = request.headers.get(SESSION_HEADER);
    if (sessionId !== null) {
      const caller = callerOf(request);
      let session = sessions.get(sessionId);
      // Only ids this gateway could have made are looked up elsewhere.
      if (directory.shared && SESSION_ID.test(sessionId) && (session === undefined || session.listed)) {
        // Redis away: a session of this replica goes on; another replica's cannot be brought here.
        const record = await directory.get(sessionId, idleTimeoutMs).catch(() => null);
        if (record === undefined && session !== undefined) {
          await closeSession(session); // closed through another replica, or expired everywhere
          session = undefined;
        } else if (record && session === undefined && ownedBy(caller, record.client)) {
          let bringing = restoring.get(sessionId);
          if (bringing === undefined) {
            // The client sends every request to the URL it connected to: its query is the session's tool list.
            bringing = restoreSession(sessionId, record, caller, toolListingOf(request.url)).finally(() => restoring.delete(sessionId));
            restoring.set(sessionId, bringing);
          }
          session = await bringing;
        }
      }
      // Another client's session id is answered like an unknown one: ids are not for sharing, and a leaked one opens nothing.
      if (!session || !ownedBy(caller, session.caller.client)) {
        return rpcError(404, 'Session not found: it was closed, expired after being idle, or belongs to an earlier gateway run; start a new session with an initialize request (without Mcp-Session-Id)', {}, -32001);
      }
      return dispatch(session, request, parsedBody);
    }
    if (request.method !== 'POST' || !hasInitialize(parsedBody)) {
      return rpcError(
        400,
        'Bad Request: Mcp-Session-Id header is missing, and this is not a request of protocol 2026-07-28 either (whose _meta names the protocol version, the client and its capabilities). For 2025-06-18, start a session with a POST of an initialize request, then send the Mcp-Session-Id it returns with every request',
      );
    }
    return openSession(request, parsedBody);
  }

  async function close(): Promise<void> {
    await Promise.allSettled([...sessions.values()].map(closeSession));
  }

  return { handle, close, size: () => sessions.size };
}

function hasInitialize(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => typeof m === 'object' && m !== null && (m as { method?: unknown }).method === 'initialize');
}
