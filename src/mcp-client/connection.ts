import { Client, SdkError, SdkErrorCode, SSEClientTransport, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import type { AddressGuard } from '../primitives/address-guard.js';
import { createGuardedFetch } from '../primitives/guarded-fetch.js';
import { createCappedFetch, isMessageTooLarge } from './capped-fetch.js';
import { connectError, type CloseReason } from './mcp-errors.js';
import type { McpServerSpec } from './server-spec.js';
import { stdioChild, type McpServerSandbox } from './stdio-child.js';
import { createWebSocketTransport } from './websocket-transport.js';

export interface McpConnection {
  readonly spec: McpServerSpec;
  readonly client: Client;
  /** The protocol revision the server and the gateway agreed on: `2026-07-28`, or a 2025-era one such as `2025-06-18`. */
  readonly protocolVersion: string;
  /** The stdio child's pid while it runs; null for HTTP, before the spawn and after the exit. */
  readonly pid: number | null;
  /** null while the connection is open. */
  readonly closeReason: CloseReason | null;
  /** The last few KiB the stdio child wrote to stderr, for error messages. */
  stderrTail(): string;
  /** What was wrong with the last message from the server the SDK could not read, for error messages. */
  lastBadMessage(): string | undefined;
  /** Closes the transport and, for stdio, resolves only once the child has exited and was reaped. */
  close(reason?: CloseReason): Promise<void>;
}

export interface ConnectionOptions {
  connectTimeoutMs: number;
  /** Cap on one message from the server (stdio line buffer, HTTP answer body or event). */
  maxMessageBytes: number;
  /** The environment a stdio child starts from, before spec.env. */
  baseEnv: Record<string, string>;
  /** When set, a stdio child is spawned inside this sandbox. */
  sandbox?: McpServerSandbox;
  /** Checks the hosts an HTTP server redirects to (its own host is reached as written). */
  addressGuard: AddressGuard;
  onSpawn(pid: number): void;
  /** Called once a stdio child has exited and was reaped, whether or not its connection ever opened. */
  onExit(pid: number): void;
  /** Called once, when the connection ends for any reason (crash included). */
  onClose(connection: McpConnection): void;
  onToolsChanged(connection: McpConnection): void;
  signal?: AbortSignal;
  /** The server refused the 2026-07-28 probe before: it gets the 2025 handshake at once. */
  knownLegacy?: boolean;
  /** Told when a stdio server refuses the probe, so the next connection need not ask again. */
  onProbeRefused?(): void;
}

/**
 * `auto`: ask `server/discover` first and speak 2026-07-28 to a server that answers it, else the
 * 2025 `initialize` handshake (the SDK offers 2025-11-25; the server may answer an older one).
 * `legacy`: the 2025 handshake only.
 */
type Negotiation = 'auto' | 'legacy';

const STDERR_TAIL_CHARS = 8192;
// The SDK already waits 2 s for a voluntary exit and 2 s after SIGTERM before it sends SIGKILL.
const REAP_WAIT_MS = 5000;
const TERMINATE_SESSION_WAIT_MS = 2000;

/**
 * Opens one connection and completes the MCP handshake, in the newest protocol both sides speak;
 * on any failure the child is reaped before the error is thrown.
 */
export async function openMcpConnection(spec: McpServerSpec, options: ConnectionOptions): Promise<McpConnection> {
  // The HTTP+SSE transport predates 2026-07-28: no server behind it speaks the new protocol.
  if (spec.transport === 'sse' || options.knownLegacy === true) return open(spec, options, 'legacy');
  try {
    return await open(spec, options, 'auto');
  } catch (error) {
    // A stdio server that exits on a request before `initialize` (some SDKs' servers do) or offers
    // no revision of 2026-07-28 or later is a 2025 server: a fresh child gets the 2025 handshake.
    // Over HTTP the same error means an outage or a 5xx, which the caller is told as it is.
    if (!(error instanceof ProbeRefused)) throw error;
    options.onProbeRefused?.();
    return open(spec, options, 'legacy');
  }
}

/** The stdio child refused the `server/discover` probe; it has been reaped. */
class ProbeRefused extends Error {}

async function open(spec: McpServerSpec, options: ConnectionOptions, negotiation: Negotiation): Promise<McpConnection> {
  if (options.signal?.aborted) {
    const context = { exited: false, stderr: '', pid: null, signal: options.signal, connectTimeoutMs: options.connectTimeoutMs };
    throw connectError(spec, options.signal.reason, context);
  }
  let closeReason: CloseReason | null = null;
  let stderr = '';
  let badMessage: string | undefined;
  let pid: number | null = null;
  let closing: Promise<void> | undefined;

  // On stdio a server that stays silent on the probe is taken for a 2025 one, so the probe and
  // the handshake after it share the connect timeout; over HTTP silence is an outage, so the
  // probe has all of it.
  const probeTimeoutMs = spec.transport === 'stdio' && negotiation === 'auto' ? Math.ceil(options.connectTimeoutMs / 2) : options.connectTimeoutMs;
  const handshakeTimeoutMs = spec.transport === 'stdio' && negotiation === 'auto' ? options.connectTimeoutMs - probeTimeoutMs : options.connectTimeoutMs;
  const client = new Client(
    { name: 'kiwi-gateway', version: '0.1.0' },
    {
      capabilities: {},
      versionNegotiation: { mode: negotiation, probe: { timeoutMs: probeTimeoutMs } },
      // Legacy servers notify on the connection; 2026-07-28 ones on a `subscriptions/listen`
      // stream the SDK opens when the server offers it. We only need to know, not the new list.
      listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => options.onToolsChanged(opened) } },
    },
  );

  const stdio =
    spec.transport === 'stdio'
      ? stdioChild(spec, {
          ...options,
          onSpawn(childPid) {
            pid = childPid;
            options.onSpawn(childPid);
          },
        })
      : undefined;
  let http: StreamableHTTPClientTransport | undefined;
  let transport: Transport;
  if (stdio) {
    // Always drained: an unread stderr pipe fills up and blocks the child.
    stdio.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    transport = stdio;
  } else if (spec.transport !== 'stdio') {
    // The server's URL is the author's (a manifest, the gateway's config; never a call's arguments), so its
    // own host is reached as written. The SDK follows redirects only within that origin (its default
    // redirectPolicy 'same-origin'); should a hop ever leave it (an option, an upgrade, OAuth discovery),
    // the guard lets it reach public addresses only.
    const fetch = createCappedFetch(options.maxMessageBytes, createGuardedFetch(options.addressGuard, new URL(spec.url).host));
    const init = { requestInit: { headers: { ...spec.headers } }, fetch };
    if (spec.transport === 'websocket') transport = createWebSocketTransport(new URL(spec.url), { headers: { ...spec.headers }, maxMessageBytes: options.maxMessageBytes, connectTimeoutMs: options.connectTimeoutMs });
    else if (spec.transport === 'http') transport = http = new StreamableHTTPClientTransport(new URL(spec.url), init);
    // The older HTTP+SSE transport (Kiwi's `transport: sse`): answers arrive as events on its GET stream.
    else transport = new SSEClientTransport(new URL(spec.url), init);
  } else throw new Error('unreachable: spec has no transport');

  const opened: McpConnection = {
    spec,
    client,
    get protocolVersion() {
      return client.getNegotiatedProtocolVersion() ?? 'unknown';
    },
    get pid() {
      return closeReason === null ? pid : null;
    },
    get closeReason() {
      return closeReason;
    },
    stderrTail: () => stderr,
    lastBadMessage: () => badMessage,
    close(reason: CloseReason = 'closed') {
      closeReason ??= reason;
      closing ??= shutDown();
      return closing;
    },
  };

  client.onclose = () => {
    // Our own close() set the reason first; anything else is the server going away.
    closeReason ??= 'exited';
    options.onClose(opened);
  };
  client.onerror = (error) => {
    if (isMessageTooLarge(error)) void opened.close('too-large');
    else badMessage = describeUnreadable(error) ?? badMessage;
  };

  async function shutDown(): Promise<void> {
    if (http) {
      // Lets a 2025 server free the session now instead of when it times out; a dead server must not hold us up.
      await withDeadline(http.terminateSession().catch(() => undefined), TERMINATE_SESSION_WAIT_MS);
    }
    await client.close().catch(() => undefined);
    // A probe that failed in place left the transport to us: the client never took it over.
    await transport.close().catch(() => undefined);
    if (stdio && pid !== null) await withDeadline(stdio.exited, REAP_WAIT_MS);
  }

  try {
    await client.connect(transport, { timeout: handshakeTimeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
  } catch (error) {
    const reasonBefore = closeReason;
    await opened.close('closed');
    if (negotiation === 'auto' && stdio && !options.signal?.aborted && error instanceof SdkError && error.code === SdkErrorCode.EraNegotiationFailed) {
      throw new ProbeRefused(error.message, { cause: error });
    }
    throw connectError(spec, error, {
      exited: reasonBefore === 'exited',
      stderr,
      pid,
      signal: options.signal,
      connectTimeoutMs: options.connectTimeoutMs,
      badMessage,
    });
  }
  return opened;
}

/**
 * What the SDK reports for a message it could not read: zod's report (a JSON value that is not
 * JSON-RPC, too long to quote) or JSON.parse's. Lines that are not JSON at all the SDK skips
 * without a word, since servers print logs to stdout.
 */
function describeUnreadable(error: Error): string | undefined {
  if (error.name === 'ZodError') return 'JSON that is not a JSON-RPC 2.0 message';
  if (error instanceof SyntaxError) return `something that is not JSON (${error.message.slice(0, 200)})`;
  return undefined;
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
