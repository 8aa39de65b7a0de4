import { z } from 'zod';
import { followSignal, throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { createAddressGuard, type AddressGuard } from '../primitives/address-guard.js';
import { toCallResult, type McpCallResult } from './call-result.js';
import { openMcpConnection, type McpConnection } from './connection.js';
import { classifyCallError } from './mcp-errors.js';
import { parseMcpServerSpec, specKey, type McpServerSpec } from './server-spec.js';
import type { McpServerSandbox } from './stdio-child.js';
import { untilAborted } from './signals.js';
import { cachedToolList, type ToolListCache } from './tool-list-cache.js';
import { fetchToolCatalog, findTool, unknownToolError, type McpToolInfo } from './tool-catalog.js';

export type { McpCallResult } from './call-result.js';
export type { McpServerSandbox } from './stdio-child.js';
export type { McpServerSpec } from './server-spec.js';
export type { McpToolInfo } from './tool-catalog.js';

export interface McpClientPoolOptions {
  /** How long a server's tool list is trusted without a `tools/list_changed` (default 60 s). */
  schemaTtlMs?: number;
  /** Per request: a tool call or one page of tools/list (default 60 s). */
  callTimeoutMs?: number;
  /** Spawn/connect plus the MCP handshake (default 30 s). */
  connectTimeoutMs?: number;
  /** Cap on the text of one tool result (default 1 MiB). */
  maxResultBytes?: number;
  /** Cap on one message from a server, the memory bound below maxResultBytes (default max(4 × maxResultBytes, 4 MiB)). */
  maxMessageBytes?: number;
  now?: () => number;
  /** What stdio children start from before spec.env (default PATH and HOME of this process; never the whole env). */
  baseEnv?: Record<string, string>;
  /** When set, stdio servers are spawned inside this sandbox (bwrap), each with the grant for its name. */
  sandbox?: McpServerSandbox;
  /** Called when a server announces `tools/list_changed`, e.g. to re-index its tools. */
  onToolsChanged?: (server: string) => void;
  /** Checks where HTTP servers redirect to (default: a guard that allows no private address); the caller closes the one it gives. */
  addressGuard?: AddressGuard;
}

export interface McpClientPool {
  listTools(spec: McpServerSpec, signal?: AbortSignal): Promise<McpToolInfo[]>;
  callTool(spec: McpServerSpec, tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpCallResult>;
  closeServer(name: string): Promise<void>;
  /** Closes every connection and reaps every child; later calls fail. */
  close(): Promise<void>;
  /**
   * `spawned` counts stdio children started in total; `pids` are the ones running now; `protocols`
   * the protocol revision each open connection speaks, by server name (`2026-07-28`, `2025-06-18`, …).
   */
  stats(): { connections: number; spawned: number; pids: number[]; protocols: Record<string, string> };
}

const optionsSchema = z.strictObject({
  schemaTtlMs: z.number().int().nonnegative().optional(),
  callTimeoutMs: z.number().int().positive().optional(),
  connectTimeoutMs: z.number().int().positive().optional(),
  maxResultBytes: z.number().int().positive().optional(),
  maxMessageBytes: z.number().int().min(4096).optional(),
  now: z.custom<() => number>((value) => typeof value === 'function', 'must be a function').optional(),
  baseEnv: z.record(z.string(), z.string()).optional(),
  sandbox: z.custom<McpServerSandbox>((value) => typeof value === 'object' && value !== null && 'sandbox' in value && typeof (value as McpServerSandbox).grantFor === 'function', 'must be { sandbox, grantFor }').optional(),
  onToolsChanged: z.custom<(server: string) => void>((value) => typeof value === 'function', 'must be a function').optional(),
  addressGuard: z.custom<AddressGuard>((value) => typeof value === 'object' && value !== null && typeof (value as AddressGuard).agent === 'function', 'must be an AddressGuard from createAddressGuard()').optional(),
});

const argsSchema = z.record(z.string(), z.unknown());

interface Entry extends ToolListCache {
  readonly spec: McpServerSpec;
  readonly key: string;
  /** Aborts this entry's connect when it is retired before the handshake finished. */
  readonly abort: AbortController;
  readonly connecting: Promise<McpConnection>;
  /** Set once connected: the protocol revision agreed with the server. */
  protocolVersion: string | undefined;
}

const MIB = 1024 * 1024;

export function createMcpClientPool(options: McpClientPoolOptions = {}): McpClientPool {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new KiwiError('INVALID_INPUT', `MCP client pool options are invalid: ${problems}. Timeouts and caps are positive integers.`);
  }
  const schemaTtlMs = options.schemaTtlMs ?? 60_000;
  const callTimeoutMs = options.callTimeoutMs ?? 60_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
  const maxResultBytes = options.maxResultBytes ?? MIB;
  const maxMessageBytes = options.maxMessageBytes ?? Math.max(4 * maxResultBytes, 4 * MIB);
  const now = options.now ?? Date.now;
  const baseEnv = options.baseEnv ?? pickEnv(['PATH', 'HOME']);
  const ownGuard = options.addressGuard === undefined ? createAddressGuard() : undefined;
  const addressGuard = options.addressGuard ?? (ownGuard as AddressGuard);

  const entries = new Map<string, Entry>();
  const closing = new Set<{ name: string; done: Promise<void> }>();
  const livePids = new Set<number>();
  /** Servers (by spec) that refused the 2026-07-28 probe: a reconnect starts them once, not twice. */
  const legacyServers = new Set<string>();
  const poolAbort = new AbortController();
  let spawned = 0;
  let closed = false;

  /** `after`: the retirement of the previous connection under this name, so two instances never overlap. */
  function createEntry(spec: McpServerSpec, key: string, after: Promise<void>): Entry {
    const abort = new AbortController();
    // The hooks below run only after the spawn, by which time `entry` is assigned.
    const entry: Entry = {
      spec,
      key,
      abort,
      protocolVersion: undefined,
      tools: undefined,
      toolsFetch: undefined,
      toolsVersion: 0,
      connecting: after.then(() => openMcpConnection(spec, {
        connectTimeoutMs,
        maxMessageBytes,
        baseEnv,
        addressGuard,
        ...(options.sandbox ? { sandbox: options.sandbox } : {}),
        signal: AbortSignal.any([poolAbort.signal, abort.signal]),
        knownLegacy: legacyServers.has(key),
        onProbeRefused() {
          // The registry names a bounded set of servers; the cap is only a backstop.
          if (legacyServers.size >= 1000) legacyServers.clear();
          legacyServers.add(key);
        },
        onSpawn(pid) {
          spawned += 1;
          livePids.add(pid);
        },
        onExit(pid) {
          livePids.delete(pid);
        },
        onClose() {
          // A crashed server leaves the pool at once, so the next call starts a fresh one.
          if (entries.get(spec.name) === entry) entries.delete(spec.name);
        },
        onToolsChanged() {
          entry.toolsVersion += 1;
          entry.tools = undefined;
          options.onToolsChanged?.(spec.name);
        },
      })),
    };
    entry.connecting.then(
      (connection) => (entry.protocolVersion = connection.protocolVersion),
      () => {
        if (entries.get(spec.name) === entry) entries.delete(spec.name);
      },
    );
    return entry;
  }

  function retire(entry: Entry): Promise<void> {
    if (entries.get(entry.spec.name) === entry) entries.delete(entry.spec.name);
    entry.abort.abort();
    const done = entry.connecting.then(
      (connection) => connection.close('closed'),
      () => undefined,
    );
    const record = { name: entry.spec.name, done };
    closing.add(record);
    void done.finally(() => closing.delete(record));
    return done;
  }

  /** Resolves once every connection under this name that is being closed has finished closing. */
  function closingOf(name: string): Promise<void> {
    const pending = [...closing].filter((record) => record.name === name).map((record) => record.done);
    return Promise.all(pending).then(() => undefined);
  }

  async function connect(specInput: McpServerSpec, signal: AbortSignal | undefined, activity: string) {
    if (closed) throw new KiwiError('MCP_ERROR', 'The MCP client pool is closed; create a new pool to talk to MCP servers again.');
    const spec = parseMcpServerSpec(specInput);
    const key = specKey(spec);
    let entry = entries.get(spec.name);
    if (entry !== undefined && entry.key !== key) {
      void retire(entry);
      entry = undefined;
    }
    if (entry === undefined) {
      entry = createEntry(spec, key, closingOf(spec.name));
      entries.set(spec.name, entry);
    }
    const connection = await untilAborted(entry.connecting, signal, () => {
      return new KiwiError('TOOL_CANCELLED', `${activity} on MCP server "${spec.name}" was cancelled by the caller while connecting.`);
    });
    return { entry, connection };
  }

  async function withConnection<T>(
    spec: McpServerSpec,
    signal: AbortSignal | undefined,
    activity: string,
    work: (entry: Entry, connection: McpConnection) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const { entry, connection } = await connect(spec, signal, activity);
      try {
        return await work(entry, connection);
      } catch (error) {
        if (error instanceof KiwiError) throw error;
        const failure = classifyCallError(error, {
          spec: entry.spec,
          activity,
          timeoutMs: callTimeoutMs,
          maxMessageBytes,
          closeReason: connection.closeReason,
          stderr: connection.stderrTail(),
          signal,
          protocolVersion: connection.protocolVersion,
          badMessage: connection.lastBadMessage(),
        });
        if (failure.dropConnection) void retire(entry);
        if (!(failure.retryOnFreshConnection && attempt === 0)) throw failure.error;
      }
    }
  }

  const catalog = (entry: Entry, connection: McpConnection, signal: AbortSignal | undefined, force: boolean) =>
    cachedToolList(entry, () => fetchToolCatalog(connection.client, entry.spec.name, callTimeoutMs), { ttlMs: schemaTtlMs, now, force, signal });

  return {
    async listTools(spec, signal) {
      throwIfAborted(signal, `Listing the tools of MCP server "${nameOf(spec)}"`);
      const { list } = await withConnection(spec, signal, 'listing its tools', (entry, connection) => catalog(entry, connection, signal, false));
      return list.map((tool) => ({ ...tool }));
    },

    async callTool(spec, tool, args, signal) {
      throwIfAborted(signal, `The call to "${String(tool)}" on MCP server "${nameOf(spec)}"`);
      if (typeof tool !== 'string' || tool === '' || tool.length > 512) {
        const shown = typeof tool === 'string' ? JSON.stringify(tool.slice(0, 80)) : typeof tool;
        throw new KiwiError('INVALID_INPUT', `Tool name must be a string of 1-512 characters, got ${shown}; use a name from listTools.`);
      }
      if (!argsSchema.safeParse(args).success) {
        throw new KiwiError('INVALID_INPUT', `Arguments for "${tool}" must be a JSON object, got ${describeType(args)}; pass {} for none.`);
      }
      return withConnection(spec, signal, `call to "${tool}"`, async (entry, connection) => {
        let { list, fetched } = await catalog(entry, connection, signal, false);
        let found = findTool(list, entry.spec.name, tool);
        // A server without list_changed may have added the tool since we cached its list.
        if (found === undefined && !fetched) {
          ({ list } = await catalog(entry, connection, signal, true));
          found = findTool(list, entry.spec.name, tool);
        }
        if (found === undefined) throw unknownToolError(list, entry.spec.name, tool);
        // The SDK never removes its abort listener, so it gets a per-call signal rather than the caller's.
        const link = signal === undefined ? undefined : followSignal(signal);
        try {
          const raw = await connection.client.callTool({ name: found.name, arguments: args }, {
            timeout: callTimeoutMs,
            ...(link === undefined ? {} : { signal: link.signal }),
          });
          return toCallResult(raw, { server: entry.spec.name, tool: found.name, maxResultBytes });
        } finally {
          link?.unlink();
        }
      });
    },

    async closeServer(name) {
      const entry = entries.get(name);
      if (entry !== undefined) void retire(entry);
      await closingOf(name);
    },

    async close() {
      closed = true;
      poolAbort.abort();
      for (const entry of [...entries.values()]) void retire(entry);
      await Promise.all([...closing].map((record) => record.done));
      await ownGuard?.close();
    },

    stats() {
      const protocols: Record<string, string> = {};
      for (const [name, entry] of entries) if (entry.protocolVersion !== undefined) protocols[name] = entry.protocolVersion;
      return { connections: entries.size, spawned, pids: [...livePids], protocols };
    },
  };
}

function nameOf(spec: unknown): string {
  return typeof spec === 'object' && spec !== null && 'name' in spec ? String(spec.name) : '(no spec)';
}

function pickEnv(names: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
