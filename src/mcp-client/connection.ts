import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { KiwiError } from '../errors.js';
import type { AddressGuard } from '../primitives/address-guard.js';
import { createGuardedFetch } from '../primitives/guarded-fetch.js';
import type { Sandbox, SandboxGrant } from '../primitives/sandbox.js';
import { createCappedFetch, createEventCappedFetch, isMessageTooLarge } from './capped-fetch.js';
import { connectError, type CloseReason } from './mcp-errors.js';
import type { McpServerSpec } from './server-spec.js';

/** Why a connection ended: the server went away, we closed it, or it sent more than the cap. */

export interface McpConnection {
  readonly spec: McpServerSpec;
  readonly client: Client;
  /** The stdio child's pid while it runs; null for HTTP, before the spawn and after the exit. */
  readonly pid: number | null;
  /** null while the connection is open. */
  readonly closeReason: CloseReason | null;
  /** The last few KiB the stdio child wrote to stderr, for error messages. */
  stderrTail(): string;
  /** Closes the transport and, for stdio, resolves only once the child has exited and was reaped. */
  close(reason?: CloseReason): Promise<void>;
}

export interface ConnectionOptions {
  connectTimeoutMs: number;
  /** Cap on one message from the server (stdio line buffer, HTTP answer body). */
  maxMessageBytes: number;
  /** The environment a stdio child starts from, before spec.env. */
  baseEnv: Record<string, string>;
  /** When set, a stdio child is spawned inside this sandbox. */
  sandbox?: McpServerSandbox;
  /** Checks the hosts an HTTP server redirects to (its own host is reached as written). */
  addressGuard: AddressGuard;
  onSpawn(pid: number): void;
  /** Called once, when the connection ends for any reason (crash included). */
  onClose(connection: McpConnection): void;
  onToolsChanged(connection: McpConnection): void;
  signal?: AbortSignal;
}

/** The sandbox stdio servers run in, and what each one may do there, by server name (its tool id). */
export interface McpServerSandbox {
  sandbox: Sandbox;
  grantFor(server: string): SandboxGrant;
}

const STDERR_TAIL_CHARS = 8192;
// The SDK already waits 2 s for a voluntary exit and 2 s after SIGTERM before it sends SIGKILL.
const REAP_WAIT_MS = 5000;
const TERMINATE_SESSION_WAIT_MS = 2000;

/** Opens one connection and completes the MCP handshake; on any failure the child is reaped before the error is thrown. */
export async function openMcpConnection(spec: McpServerSpec, options: ConnectionOptions): Promise<McpConnection> {
  if (options.signal?.aborted) {
    const context = { exited: false, stderr: '', pid: null, signal: options.signal, connectTimeoutMs: options.connectTimeoutMs };
    throw connectError(spec, options.signal.reason, context);
  }
  const client = new Client({ name: 'kiwi-gateway', version: '0.1.0' }, { capabilities: {} });
  let closeReason: CloseReason | null = null;
  let stderr = '';
  let pid: number | null = null;
  let closing: Promise<void> | undefined;
  let markEnded!: () => void;
  const ended = new Promise<void>((resolve) => (markEnded = resolve));

  const stdio = spec.transport === 'stdio' ? stdioTransport(spec, options) : undefined;
  // The server's URL is the author's (a manifest, the gateway's config; never a call's arguments), so its
  // own host is reached as written. The SDK follows redirects only within that origin (its default
  // redirectPolicy 'same-origin'); should a hop ever leave it (an option, an upgrade, OAuth discovery),
  // the guard lets it reach public addresses only.
  const baseFetch = spec.transport === 'stdio' ? undefined : createGuardedFetch(options.addressGuard, new URL(spec.url).host);
  const http =
    spec.transport === 'http'
      ? new StreamableHTTPClientTransport(new URL(spec.url), {
          requestInit: { headers: { ...spec.headers } },
          fetch: createCappedFetch(options.maxMessageBytes, baseFetch),
        })
      : undefined;
  // The older HTTP+SSE transport (Kiwi's `transport: sse`): answers arrive on the GET stream, so each event is capped there.
  const sse =
    spec.transport === 'sse'
      ? new SSEClientTransport(new URL(spec.url), {
          requestInit: { headers: { ...spec.headers } },
          fetch: createEventCappedFetch(options.maxMessageBytes, baseFetch),
        })
      : undefined;
  const transport = stdio ?? http ?? sse;
  if (transport === undefined) throw new Error('unreachable: spec has no transport');

  if (stdio) {
    // Always drained: an unread stderr pipe fills up and blocks the child.
    stdio.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    // The SDK starts the transport inside connect(); wrapping start() is the one place the pid is known
    // before a fast-crashing child clears it.
    const start = stdio.start.bind(stdio);
    stdio.start = async () => {
      await start();
      pid = stdio.pid;
      if (pid !== null) options.onSpawn(pid);
    };
  }

  const connection: McpConnection = {
    spec,
    client,
    get pid() {
      return closeReason === null ? pid : null;
    },
    get closeReason() {
      return closeReason;
    },
    stderrTail: () => stderr,
    close(reason: CloseReason = 'closed') {
      closeReason ??= reason;
      closing ??= shutDown();
      return closing;
    },
  };

  client.onclose = () => {
    // Our own close() set the reason first; anything else is the server going away.
    closeReason ??= 'exited';
    markEnded();
    options.onClose(connection);
  };
  client.onerror = (error) => {
    if (isMessageTooLarge(error)) void connection.close('too-large');
  };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onToolsChanged(connection));

  async function shutDown(): Promise<void> {
    if (http) {
      // Lets the server free the session now instead of when it times out; a dead server must not hold us up.
      await withDeadline(http.terminateSession().catch(() => undefined), TERMINATE_SESSION_WAIT_MS);
    }
    await client.close().catch(() => undefined);
    if (stdio && pid !== null) await withDeadline(ended, REAP_WAIT_MS);
    markEnded();
  }

  try {
    await client.connect(transport, { timeout: options.connectTimeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
  } catch (error) {
    const reasonBefore = closeReason;
    await connection.close('closed');
    throw connectError(spec, error, {
      exited: reasonBefore === 'exited',
      stderr,
      pid,
      signal: options.signal,
      connectTimeoutMs: options.connectTimeoutMs,
    });
  }
  return connection;
}

function stdioTransport(spec: Extract<McpServerSpec, { transport: 'stdio' }>, options: ConnectionOptions): StdioClientTransport {
  const env = { ...options.baseEnv, ...spec.env };
  const cwd = spec.cwd ?? process.cwd();
  let argv = [spec.command, ...spec.args];
  if (options.sandbox) {
    try {
      // No call timeout bounds a server's life (the pool keeps it), hence no CPU-time limit: null.
      argv = options.sandbox.sandbox.wrap(argv, cwd, options.sandbox.grantFor(spec.name), null, env);
    } catch (error) {
      if (!(error instanceof KiwiError)) throw connectError(spec, error, { exited: false, stderr: '', pid: null, signal: options.signal, connectTimeoutMs: options.connectTimeoutMs });
      throw new KiwiError(error.code, `MCP server "${spec.name}" was not started: ${error.message}`, { cause: error, details: { server: spec.name, ...error.details } });
    }
  }
  return new StdioClientTransport({
    command: argv[0] as string,
    args: argv.slice(1),
    env,
    cwd,
    stderr: 'pipe',
    maxBufferSize: options.maxMessageBytes,
  });
}

function withDeadline(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void promise.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
