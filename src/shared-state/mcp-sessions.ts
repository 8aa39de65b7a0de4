import { redisFailure, type Redis } from './redis-client.js';

/**
 * Legacy MCP sessions (Streamable HTTP with `Mcp-Session-Id`, protocol 2025-06-18) that any
 * replica can serve: the replica a client opened its session on writes down whose it is and the
 * `initialize` the client sent; another replica that gets a request of that session replays the
 * handshake into a session of its own with the same id (http/mcp/mcp-route.ts). Without Redis a
 * session lives only where it was opened, as before.
 */
export interface McpSessionRecord {
  /** The client that opened it: only that client may use it. */
  client: string;
  /** The client's `initialize` request, as it sent it. */
  initialize: unknown;
}

export interface McpSessionDirectory {
  /** True when other replicas read it (Redis); false, sessions stay where they were opened. */
  readonly shared: boolean;
  put(id: string, record: McpSessionRecord, ttlMs: number): Promise<void>;
  /** The session's record, its idle time restarted; undefined once closed or expired. */
  get(id: string, ttlMs: number): Promise<McpSessionRecord | undefined>;
  /** The client closed it (HTTP DELETE): no replica serves it any more. */
  remove(id: string): Promise<void>;
}

export const LOCAL_MCP_SESSIONS: McpSessionDirectory = {
  shared: false,
  put: async () => undefined,
  get: async () => undefined,
  remove: async () => undefined,
};

/** Largest `initialize` kept for a session: its capabilities and client info, never a payload. */
const MAX_RECORD_BYTES = 64 * 1024;

export function createRedisMcpSessions(redis: Redis, options: { url: string; prefix: string }): McpSessionDirectory {
  const key = (id: string): string => `${options.prefix}mcp-session:${id}`;
  const failed = (what: string) => (error: unknown) => {
    throw redisFailure(options.url, what, error);
  };
  return {
    shared: true,
    async put(id, record, ttlMs) {
      const text = JSON.stringify(record);
      if (text.length > MAX_RECORD_BYTES) return; // served where it was opened only
      await redis.set(key(id), text, { expiration: { type: 'PX', value: ttlMs } }).catch(failed('an MCP session write'));
    },
    async get(id, ttlMs) {
      const text = await redis.getEx(key(id), { type: 'PX', value: ttlMs }).catch(failed('an MCP session look-up'));
      if (typeof text !== 'string') return undefined;
      try {
        const record = JSON.parse(text) as Partial<McpSessionRecord>;
        return typeof record.client === 'string' ? { client: record.client, initialize: record.initialize } : undefined;
      } catch {
        return undefined;
      }
    },
    async remove(id) {
      await redis.del(key(id)).catch(failed('an MCP session close'));
    },
  };
}
