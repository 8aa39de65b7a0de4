import type { Hono } from 'hono';
import { threadUsage } from '../../threads/thread-usage.js';
import { KiwiError } from '../../base/errors.js';
import { isThreadId, noSuchThread, type ThreadHeader, type ThreadRecord, type ThreadStatus, type ThreadStore } from '../../threads/thread-store.js';
import { ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import { intParam, readId } from '../server/json-api.js';

/**
 * Directive threads for the people who run the gateway: the most recently written first, each
 * with its directive, client and how it stands, and one thread's transcript a page of lines at a
 * time, as `kiwi threads list` and `show` read them (the files of `.ai/threads/`, or with
 * DATABASE_URL those of every gateway on that Postgres). Every client's threads: the area is the
 * admin role's alone.
 */

/** What the area reads of the thread store. */
export type AdminThreads = Pick<ThreadStore, 'list' | 'read' | 'isRunning'>;

/** `cut_short`: not ended, and no live process writes it any more (`kiwi threads resume` goes on with it). */
type ShownStatus = ThreadStatus | 'running' | 'cut_short';

const MAX_LISTED = 200;
const MAX_LINES = 1000;

export function mountAdminThreads(app: Hono, route: AdminRoute, threads: AdminThreads): void {
  app.get(
    `${ADMIN_PREFIX}/threads`,
    route('threads', async (c) => {
      const limit = intParam(c.req.query('limit'), 50, 1, MAX_LISTED);
      const listed = await threads.list(limit + 1);
      return c.json({
        threads: listed.slice(0, limit).map((t) => shownThread(t.header, t.end, t.end?.status ?? (t.running ? 'running' : 'cut_short'))),
        more: listed.length > limit,
      });
    }),
  );

  app.get(
    `${ADMIN_PREFIX}/threads/:id`,
    route('threads', async (c) => {
      const id = readId(c.req.param('id'), 'thread id');
      if (!isThreadId(id)) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(id.slice(0, 80))} is not a thread id (a UUID); GET ${ADMIN_PREFIX}/threads lists them`);
      const after = intParam(c.req.query('after'), 0, 0, Number.MAX_SAFE_INTEGER);
      const limit = intParam(c.req.query('limit'), 200, 1, MAX_LINES);
      const lines = await threads.read(id);
      const [header] = lines;
      // A transcript whose first line is not its header is not a thread anyone can resume or trust.
      if (header?.type !== 'thread') throw noSuchThread(id);
      const last = lines.at(-1);
      const end = last?.type === 'end' ? last : undefined;
      const status = end?.status ?? ((await threads.isRunning(id)) ? 'running' : 'cut_short');
      const page = lines.slice(after, after + limit);
      const usage = threadUsage(lines);
      return c.json({ thread: { ...shownThread(header, end, status), ...(usage === undefined ? {} : { usage }) }, lines: page, next_after: Math.min(after, lines.length) + page.length, more: after + page.length < lines.length });
    }),
  );
}

function shownThread(header: ThreadHeader, end: Extract<ThreadRecord, { type: 'end' }> | undefined, status: ShownStatus): Record<string, unknown> {
  return {
    id: header.id,
    directive: header.directive,
    ...(header.version === undefined ? {} : { version: header.version }),
    client: header.client,
    model: header.model,
    ...(header.parent === undefined ? {} : { parent: header.parent }),
    depth: header.depth,
    started_at: header.started_at,
    status,
    ...(end === undefined ? {} : { ended_at: end.ended_at, steps_taken: end.steps_taken, ...(end.failure === undefined ? {} : { failure: end.failure }) }),
  };
}
