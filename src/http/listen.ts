import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KiwiError } from '../errors.js';

export interface ListenOptions {
  host: string;
  port: number;
  /** Longest wait for a client to send its request headers (slowloris guard); default 30 s. */
  headersTimeoutMs?: number;
}

export interface Listener {
  /** `http://host:port`, with the port the OS picked when 0 was asked. */
  url: string;
  port: number;
  /**
   * Stops taking connections, lets requests in flight finish for up to `graceMs`, then cuts the
   * connections still open. Resolves when the server is closed.
   */
  close(graceMs: number): Promise<void>;
}

type Fetch = (request: Request) => Response | Promise<Response>;

/** Serves `fetch` (a hono app's) on Node's HTTP server. */
export async function listen(fetch: Fetch, options: ListenOptions): Promise<Listener> {
  const server = createAdaptorServer({ fetch, hostname: options.host }) as Server;
  server.headersTimeout = options.headersTimeoutMs ?? 30_000;
  // Streamed answers can run for minutes; the loop's own time limit bounds them, not Node's.
  server.requestTimeout = 0;
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
    close(graceMs) {
      closing ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
