import { createHash } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { AdminArea } from '../clients/access.js';
import type { Caller } from '../policy/caller.js';
import { isThreadId } from '../threads/thread-store.js';
import type { Viewer } from './console-layout.js';
import type { AdminCall } from './console-route.js';

/**
 * GET /ui/events?live=PAGE: a stream that says `changed` when what the open page shows has moved,
 * so the page fetches its main part again (assets/console.js, which passes its `main[data-live]`
 * as PAGE). The threads list watches the threads; a thread's page (`thread:ID`) that thread's
 * lines and how it stands; every other page the approvals and executions (one asked or answered,
 * started, changed or ended). It looks through the admin API every LOOK_MS, as the logged-in
 * key: what replicas share, from whichever replica serves the stream.
 */

export interface LiveEventDeps {
  sessionOf(c: Context): Promise<{ caller: Caller; viewer: Viewer } | undefined>;
  admin: AdminCall;
  /** Aborted when the gateway stops: the streams end then. */
  until?: AbortSignal;
  lookMs?: number;
}

/** The admin API reads that tell whether a page changed, and the area they need. */
interface Watched {
  area: AdminArea;
  reads: string[];
}

/** The pages whose `data-live` is a plain name, and the queue most of them show. */
const LIVE_PAGES = new Set(['overview', 'approvals', 'executions', 'execution']);

const LOOK_MS = 1000;
/** A stream ends after this; the browser opens a new one (EventSource reconnects by itself). */
const MAX_STREAM_MS = 15 * 60_000;
/** Streams open at once in this process: each looks through the admin API every second. */
const MAX_STREAMS = 64;

export function mountLiveEvents(app: Hono, deps: LiveEventDeps): void {
  const lookMs = deps.lookMs ?? LOOK_MS;
  let open = 0;
  app.get('/ui/events', async (c) => {
    const who = await deps.sessionOf(c);
    if (who === undefined) return c.text('log in first', 401);
    const watched = watchedOf(c.req.query('live'), who.viewer);
    if (watched === undefined) return c.text('live must name a live page of the console: overview, approvals, executions, execution, threads or thread:ID', 400);
    if (!who.viewer.may(watched.area)) return c.text(`this key may not open ${watched.area}`, 403);
    const fingerprint = async (): Promise<string> => {
      const parts = await Promise.all(watched.reads.map((read) => deps.admin(who.caller, 'GET', read)));
      return createHash('sha256').update(JSON.stringify(parts.map((p) => p.body))).digest('base64url');
    };
    if (open >= MAX_STREAMS) return c.text(`${MAX_STREAMS} live pages are open on this gateway, the most it follows at once; close some, or reload later`, 503);
    open++;
    return streamSSE(c, async (stream) => {
      try {
        const started = Date.now();
        let last = await fingerprint();
        const ended = (): boolean => stream.aborted || stream.closed || deps.until?.aborted === true || Date.now() - started > MAX_STREAM_MS;
        await stream.writeSSE({ event: 'ready', data: '' });
        while (!ended()) {
          await stream.sleep(lookMs);
          // A session that ended meanwhile (its key revoked) follows nothing more.
          if (ended() || (await deps.sessionOf(c)) === undefined) break;
          const now = await fingerprint();
          if (now !== last) {
            last = now;
            await stream.writeSSE({ event: 'changed', data: '' });
          }
        }
      } finally {
        open--;
      }
    });
  });
}

/** What the page named by `live` shows (none named: the queue, as most pages); undefined when it names no live page. */
function watchedOf(live: string | undefined, viewer: Viewer): Watched | undefined {
  if (live === undefined || LIVE_PAGES.has(live)) {
    return { area: 'executions', reads: [...(viewer.may('approvals') ? ['/admin/v1/approvals?limit=200'] : []), '/admin/v1/executions?limit=50'] };
  }
  if (live === 'threads') return { area: 'threads', reads: ['/admin/v1/threads?limit=50'] };
  const thread = /^thread:(.*)$/.exec(live)?.[1];
  // Asked from past its last line, the thread's page has no lines: only how many there are (next_after) and how it stands.
  if (thread !== undefined && isThreadId(thread)) return { area: 'threads', reads: [`/admin/v1/threads/${thread}?after=${Number.MAX_SAFE_INTEGER}&limit=1`] };
  return undefined;
}
