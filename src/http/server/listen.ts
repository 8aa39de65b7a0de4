import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { KiwiError } from '../../base/errors.js';
import { LISTEN_DEFAULTS, type ListenLimits } from './listen-limits.js';
import type { BodyDeadline, NodeBindings } from './node-bindings.js';
import { overloadedResponse } from './overloaded-response.js';

export interface ListenOptions extends Partial<ListenLimits> {
  host: string;
  port: number;
}

export interface Listener {
  /** `http://host:port`, with the port the OS picked when 0 was asked. */
  url: string;
  port: number;
  /**
   * Stops taking connections, lets requests in flight finish for up to `graceMs`, then cuts the
   * connections still open. Resolves when the server is closed. With `onGraceOver`, that is
   * awaited first (it ends what still runs, so that each answer can say why), and the connections
   * get up to a second more to end on their own before they are cut.
   */
  close(graceMs: number, onGraceOver?: () => Promise<void>): Promise<void>;
}

/** After the grace period's `onGraceOver`, how long answers that now end (an error event) have to go out before their connections are cut. */
const LAST_WORDS_MS = 1_000;

/** `env` is @hono/node-server's (the Node request and response) with the body deadline added: NodeBindings. */
type Fetch = (request: Request, env?: unknown) => Response | Promise<Response>;

function positiveInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new KiwiError('INVALID_INPUT', `listen: ${name} must be a whole number of at least 1, got ${String(value)}`);
  return value;
}

/**
 * Serves `fetch` (a hono app's) on Node's HTTP server, with every phase that waits on the client
 * bounded: the headers, the body, the idle time between requests, and the number of connections.
 * The response is not bounded here: a streamed answer runs as long as the agent loop's own limit.
 */
export async function listen(fetch: Fetch, options: ListenOptions): Promise<Listener> {
  const headersTimeoutMs = positiveInt(options.headersTimeoutMs, LISTEN_DEFAULTS.headersTimeoutMs, 'headersTimeoutMs');
  const bodyTimeoutMs = positiveInt(options.bodyTimeoutMs, LISTEN_DEFAULTS.bodyTimeoutMs, 'bodyTimeoutMs');
  const keepAliveTimeoutMs = positiveInt(options.keepAliveTimeoutMs, LISTEN_DEFAULTS.keepAliveTimeoutMs, 'keepAliveTimeoutMs');
  const maxConnections = positiveInt(options.maxConnections, LISTEN_DEFAULTS.maxConnections, 'maxConnections');

  const overCap = new WeakSet<Socket>();
  const guarded: Fetch = (request, env) => {
    const bindings = env as NodeBindings;
    if (overCap.has(bindings.incoming.socket)) return overloadedResponse(request, maxConnections);
    // The app reads the body (read-json-body.ts) and holds it to this.
    const bodyDeadline: BodyDeadline = { at: performance.now() + bodyTimeoutMs, timeoutMs: bodyTimeoutMs };
    return fetch(request, { ...bindings, bodyDeadline });
  };
  const server = createAdaptorServer({
    fetch: guarded,
    hostname: options.host,
    // Node checks its header and request deadlines on this beat; its default (30 s) would let a
    // deadline run over by as much again.
    serverOptions: { connectionsCheckingInterval: Math.max(10, Math.min(1_000, headersTimeoutMs / 2)) },
  }) as Server;
  server.headersTimeout = headersTimeoutMs;
  // Node's requestTimeout bounds receiving the request (headers and body), never the response.
  // The body deadline (read-json-body.ts) answers first, in the client's protocol; this is the
  // backstop for a body nobody reads, and Node answers it with a bare 408.
  server.requestTimeout = headersTimeoutMs + bodyTimeoutMs + 1_000;
  server.keepAliveTimeout = keepAliveTimeoutMs;
  // Past the cap, a connection is still accepted so that its request can be told why (503) —
  // up to twice the cap; beyond that Node drops connections unanswered, which costs nothing.
  server.maxConnections = maxConnections * 2;
  let open = 0;
  server.on('connection', (socket: Socket) => {
    open += 1;
    if (open > maxConnections) overCap.add(socket);
    socket.once('close', () => {
      open -= 1;
    });
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      reject(
        error.code === 'EADDRINUSE'
          ? new KiwiError('INVALID_INPUT', `${options.host}:${options.port} is already in use; stop the other server or pick another port (KIWI_PORT or \`port\` in .ai/config/gateway.yaml)`)
          : error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND'
            ? new KiwiError('INVALID_INPUT', `cannot listen on ${options.host}: no such local address; use 127.0.0.1, or 0.0.0.0 to listen on every interface`)
            : error,
      );
    };
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    close(graceMs, onGraceOver) {
      closing ??= new Promise<void>((resolve) => {
        let cut: NodeJS.Timeout | undefined;
        const timer = setTimeout(() => {
          if (onGraceOver === undefined) return server.closeAllConnections();
          void onGraceOver()
            .catch(() => undefined)
            .then(() => (cut = setTimeout(() => server.closeAllConnections(), LAST_WORDS_MS)));
        }, graceMs);
        // A connection whose answer ends after this (a stream the gateway ends at shutdown) goes
        // idle, and Node would hold it open until its keep-alive timeout: closed as it idles.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearTimeout(timer);
          clearTimeout(cut);
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
