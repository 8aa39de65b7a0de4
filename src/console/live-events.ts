import { createHash } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Caller } from '../policy/caller.js';
import type { Viewer } from './console-layout.js';
import type { AdminCall } from './console-route.js';

/**
 * GET /ui/events: a stream that says `changed` when what the pages show has moved (an approval
 * asked or answered, an execution started, changed or ended), so the open page fetches its main
 * part again (assets/console.js). It looks through the admin API every LOOK_MS, as the
 * logged-in key: what replicas share, from whichever replica serves the stream.
 */

export interface LiveEventDeps {
  sessionOf(c: Context): Promise<{ caller: Caller; viewer: Viewer } | undefined>;
  admin: AdminCall;
  /** Aborted when the gateway stops: the streams end then. */
  until?: AbortSignal;
  lookMs?: number;
}

const LOOK_MS = 1000;
/** A stream ends after this; the browser opens a new one (EventSource reconnects by itself). */
const MAX_STREAM_MS = 15 * 60_000;

export function mountLiveEvents(app: Hono, deps: LiveEventDeps): void {
  const lookMs = deps.lookMs ?? LOOK_MS;
  app.get('/ui/events', async (c) => {
    const who = await deps.sessionOf(c);
    if (who === undefined) return c.text('log in first', 401);
    const fingerprint = async (): Promise<string> => {
      const parts = await Promise.all([
        who.viewer.may('approvals') ? deps.admin(who.caller, 'GET', '/admin/v1/approvals?limit=200') : undefined,
        deps.admin(who.caller, 'GET', '/admin/v1/executions?limit=50'),
      ]);
      return createHash('sha256').update(JSON.stringify(parts.map((p) => p?.body ?? null))).digest('base64url');
    };
    return streamSSE(c, async (stream) => {
      const started = Date.now();
      let last = await fingerprint();
      const ended = (): boolean => stream.aborted || stream.closed || deps.until?.aborted === true || Date.now() - started > MAX_STREAM_MS;
      await stream.writeSSE({ event: 'ready', data: '' });
      while (!ended()) {
        await stream.sleep(lookMs);
        if (ended()) break;
        const now = await fingerprint();
        if (now !== last) {
          last = now;
          await stream.writeSSE({ event: 'changed', data: '' });
        }
      }
    });
  });
}
