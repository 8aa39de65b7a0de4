import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';

/**
 * Node's own request and response, when the app is served on Node's HTTP server (listen.ts);
 * absent under `app.fetch(request)` alone. The chat routes read the body and write streams
 * through them directly: Web streams in between cost a request more than the rest of its
 * pass-through.
 */
/** By when the request body must have arrived in full (set by listen.ts for every request). */
export interface BodyDeadline {
  /** A `performance.now()` time. */
  at: number;
  /** The limit it was set from, for the message. */
  timeoutMs: number;
}

export interface NodeBindings {
  incoming: IncomingMessage;
  outgoing: ServerResponse;
  bodyDeadline?: BodyDeadline;
}

export function nodeBindings(c: Context): NodeBindings | undefined {
  const env = c.env as Partial<NodeBindings> | undefined;
  if (env?.incoming === undefined || env.outgoing === undefined) return undefined;
  return env as NodeBindings;
}

/** What a handler returns after writing its response to `outgoing` itself. */
export const SENT_DIRECTLY = RESPONSE_ALREADY_SENT;

const ALREADY_SENT_HEADER = 'x-hono-already-sent';

/** True for a response that only says the handler wrote its own (SENT_DIRECTLY, as hono may have copied it). */
export function sentDirectly(response: Response): boolean {
  return response.headers.has(ALREADY_SENT_HEADER);
}
