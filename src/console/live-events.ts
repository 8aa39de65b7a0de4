import { createHash } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { AdminArea } from '../clients/access.js';
import type { KernelEventsBus } from '../contracts/kernel-events-bus.js';
import type { Caller } from '../policy/caller.js';
import { isThreadId } from '../threads/thread-store.js';
import type { Viewer } from './console-layout.js';
import type { AdminCall } from './console-route.js';

/**
 * GET /ui/events?live=PAGE: a stream that says `changed` when what the open page shows has moved,
 * so the page fetches its main part again (assets/console.js, which passes its `main[data-live]`
 * as PAGE). The threads list watches the threads; a thread's page (`thread:ID`) that thread's
 * lines and how it stands; every other page the approvals and executions (one asked or answered,
 * started, changed or ended). It looks through the admin API as the logged-in key: what replicas
 * share, from whichever replica serves the stream.
 *
 * Issue 39: 64 pages each re-reading the executions list every second stalled the gateway, and
 * one approver's 64 pages took every stream of the process. So a page that follows the kernel
 * looks only when the kernel said something changed (its committed events, which carry every
 * replica's over Redis), at its next beat (LOOK_MS), and else every IDLE_LOOK_MS (a note can be
 * lost; replicas without Redis); each beat checks only the session. One key holds at most
 * MAX_STREAMS_PER_KEY streams of the process's MAX_STREAMS; and a stream that ends lets go of its
 * listener, its timer and its slots at once.
 */

export interface LiveEventDeps {
  /** The session's caller and viewer, and its key's id (streams are counted per key). */
  sessionOf(c: Context): Promise<{ caller: Caller; viewer: Viewer; key: string } | undefined>;
  admin: AdminCall;
  /** Word of the kernel's committed events: a page that follows the kernel looks when told. Absent: it looks every `lookMs`. */
  events?: KernelEventsBus;
  /** Aborted when the gateway stops: the streams end then. */
  until?: AbortSignal;
  /** The beat (default 1 s): the session is checked, and the page looked at when the kernel told of a change (without `events`: always). */
  lookMs?: number;
  /** With `events`, how long a stream goes without a look when nothing is told (default 15 s). */
  idleLookMs?: number;
  maxStreams?: number;
  maxStreamsPerKey?: number;
}

/** The admin API reads that tell whether a page changed, the area they need, and whether the kernel's events tell of their changes. */
interface Watched {
  area: AdminArea;
  reads: string[];
  kernel: boolean;
}

/** The pages whose `data-live` is a plain name, and the queue most of them show. */
const LIVE_PAGES = new Set(['overview', 'approvals', 'executions', 'execution']);

const LOOK_MS = 1000;
const IDLE_LOOK_MS = 15_000;
/** A stream ends after this; the browser opens a new one (EventSource reconnects by itself). */
const MAX_STREAM_MS = 15 * 60_000;
/** Streams open at once in this process, and of them with one key (a person's tabs). */
const MAX_STREAMS = 64;
const MAX_STREAMS_PER_KEY = 8;

export function mountLiveEvents(app: Hono, deps: LiveEventDeps): void {
  const lookMs = deps.lookMs ?? LOOK_MS;
  const idleLookMs = deps.idleLookMs ?? IDLE_LOOK_MS;
  const maxStreams = deps.maxStreams ?? MAX_STREAMS;
  const maxPerKey = deps.maxStreamsPerKey ?? MAX_STREAMS_PER_KEY;
  let open = 0;
  const openByKey = new Map<string, number>();
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
    const mine = openByKey.get(who.key) ?? 0;
    // Checked first: a key at its share hears so, and never takes the last slots of the process.
    if (mine >= maxPerKey) return c.text(`${maxPerKey} live pages are open with this key, the most one key may follow at once; close some tabs, or reload later`, 429, { 'retry-after': '5' });
    if (open >= maxStreams) return c.text(`${maxStreams} live pages are open on this gateway, the most it follows at once; close some, or reload later`, 503, { 'retry-after': '5' });
    open++;
    openByKey.set(who.key, mine + 1);
    const release = (): void => {
      open--;
      const left = (openByKey.get(who.key) ?? 1) - 1;
      if (left > 0) openByKey.set(who.key, left);
      else openByKey.delete(who.key);
    };
    const told = deps.events !== undefined && watched.kernel ? deps.events : undefined;
    return streamSSE(c, async (stream) => {
      // Ends every wait at once when the page goes or the gateway stops.
      const gone = new AbortController();
      const stop = (): void => gone.abort();
      stream.onAbort(stop);
      deps.until?.addEventListener('abort', stop, { once: true });
      // A note only marks the page stale: the next beat looks, so a burst of changes costs one look.
      let stale = false;
      const unsubscribe = told?.subscribe(() => {
        stale = true;
      });
      try {
        const started = Date.now();
        const ended = (): boolean => gone.signal.aborted || stream.aborted || stream.closed || Date.now() - started > MAX_STREAM_MS;
        let last = await fingerprint();
        let looked = Date.now();
        await stream.writeSSE({ event: 'ready', data: '' });
        while (!ended()) {
          await pause(lookMs, gone.signal);
          // A session that ended meanwhile (its key revoked) follows nothing more.
          if (ended() || (await deps.sessionOf(c)) === undefined) break;
          if (told !== undefined && !stale && Date.now() - looked < idleLookMs) continue;
          stale = false;
          looked = Date.now();
          const now = await fingerprint();
          if (now !== last) {
            last = now;
            await stream.writeSSE({ event: 'changed', data: '' });
          }
        }
      } finally {
        unsubscribe?.();
        deps.until?.removeEventListener('abort', stop);
        gone.abort();
        release();
      }
    });
  });
}

/** Resolves after `ms`, or at once when `signal` aborts; leaves no timer or listener behind either way. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** What the page named by `live` shows (none named: the queue, as most pages); undefined when it names no live page. */
function watchedOf(live: string | undefined, viewer: Viewer): Watched | undefined {
  if (live === undefined || LIVE_PAGES.has(live)) {
    return { area: 'executions', reads: [...(viewer.may('approvals') ? ['/admin/v1/approvals?limit=200'] : []), '/admin/v1/executions?limit=50'], kernel: true };
  }
  if (live === 'threads') return { area: 'threads', reads: ['/admin/v1/threads?limit=50'], kernel: false };
  const thread = /^thread:(.*)$/.exec(live)?.[1];
  // Asked from past its last line, the thread's page has no lines: only how many there are (next_after) and how it stands.
  if (thread !== undefined && isThreadId(thread)) return { area: 'threads', reads: [`/admin/v1/threads/${thread}?after=${Number.MAX_SAFE_INTEGER}&limit=1`], kernel: false };
  return undefined;
}
