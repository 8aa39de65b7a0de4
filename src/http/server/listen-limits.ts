/**
 * The HTTP listener's limits on what clients may make it wait for, apart from the listener so
 * that the config can name the defaults without loading the server.
 */
export interface ListenLimits {
  /**
   * Longest wait for a client to send its request headers, counted from the connection (or
   * the previous response): bounds slowloris and connections that send nothing.
   */
  headersTimeoutMs: number;
  /** Longest wait for the whole request body once the headers are in; a late body is answered 408. */
  bodyTimeoutMs: number;
  /** How long a kept-alive connection may sit idle between requests. */
  keepAliveTimeoutMs: number;
  /** Open connections served at once; requests on connections past it are answered 503. */
  maxConnections: number;
}

export const LISTEN_DEFAULTS: ListenLimits = { headersTimeoutMs: 30_000, bodyTimeoutMs: 60_000, keepAliveTimeoutMs: 5_000, maxConnections: 1024 };

/** The port `kiwi serve` listens on, and the address the CLI talks to, when none is given. */
export const DEFAULT_PORT = 8787;
