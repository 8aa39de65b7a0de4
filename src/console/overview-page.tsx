import { ExecutionTable, type ExecutionRow } from './execution-pages.js';
import { formatDuration } from './format-duration.js';
import { render, type ConsoleRouter } from './console-route.js';
import { BarChart, Gauge } from './svg-charts.js';

/**
 * The overview: what waits for a person, what runs, requests per minute and how long they took
 * (from the newest executions, which every replica shares), and this replica's upstreams,
 * resolution rate and prefetch hits.
 */

const MINUTES = 30;
const SAMPLE = 200;

export function mountOverviewPage(router: ConsoleRouter): void {
  router.page('/ui', 'executions', async (c, r) => {
    const [approvals, page, counters] = await Promise.all([
      r.viewer.may('approvals') ? r.api('GET', '/admin/v1/approvals?limit=200') : Promise.resolve({ approvals: [] }),
      r.api('GET', `/admin/v1/executions?limit=${SAMPLE}`),
      r.viewer.may('counters') ? r.api('GET', '/admin/v1/counters') : Promise.resolve(undefined),
    ]);
    const waiting = (approvals['approvals'] as unknown[]).length;
    const rows = page['executions'] as ExecutionRow[];
    const now = Date.now();
    const perMinute = Array.from({ length: MINUTES }, (_, i) => ({ label: `${MINUTES - i} min ago`, value: 0 }));
    for (const e of rows) {
      const ago = Math.floor((now - Date.parse(e.created_at)) / 60_000);
      const bucket = perMinute[MINUTES - 1 - ago];
      if (bucket !== undefined) bucket.value++;
    }
    const durations = rows.filter((e) => e.status === 'completed').map((e) => Date.parse(e.updated_at) - Date.parse(e.created_at)).filter((ms) => Number.isFinite(ms) && ms >= 0).sort((a, b) => a - b);
    const pct = (p: number): string => (durations.length === 0 ? '-' : formatDuration(durations[Math.min(durations.length - 1, Math.floor(p * durations.length))] as number));
    const live = rows.filter((e) => e.status === 'running' || e.status === 'blocked' || e.status === 'pending');
    const prefetch = (counters?.['prefetch'] ?? {}) as Record<string, number>;
    const lookups = (prefetch['hits'] ?? 0) + (prefetch['misses'] ?? 0);
    const resolution = (counters?.['resolution'] ?? {}) as Record<string, number>;
    const intents = (resolution['resolved'] ?? 0) + (resolution['asked_back'] ?? 0) + (resolution['unresolved'] ?? 0);
    const upstreams = (counters?.['upstreams'] ?? []) as string[];
    // An upstream a request or a check found down says so, and why on hover.
    const health = new Map(((counters?.['upstream_health'] ?? []) as { name: string; state: string; error?: string }[]).map((h) => [h.name, h]));
    return render(
      c,
      { title: 'Overview', viewer: r.viewer, current: '/ui', live: 'overview' },
      <>
        <h1>Overview</h1>
        <section class="tiles">
          <a class="tile" href="/ui/approvals">
            <span class="number">{waiting}</span> waiting for approval
          </a>
          <a class="tile" href="/ui/executions?status=running">
            <span class="number">{live.length}</span> running or blocked
          </a>
          <div class="tile">
            <span class="number">{pct(0.5)}</span> p50 of the last {durations.length} finished
          </div>
          <div class="tile">
            <span class="number">{pct(0.99)}</span> p99
          </div>
          {counters === undefined ? null : (
            <div class="tile">
              <span class="number">{formatDuration(Number(counters['uptime_s'] ?? 0) * 1000)}</span> up (this replica)
            </div>
          )}
          {counters === undefined ? null : (
            <div class="tile">
              <span class="number">{upstreams.length}</span> {`upstream${upstreams.length === 1 ? '' : 's'}${upstreams.length === 0 ? ' (the offline demo model)' : ':'}`}
              {upstreams.map((name, i) => {
                const down = health.get(name)?.state === 'down';
                return (
                  <>
                    {i === 0 ? ' ' : ', '}
                    {down ? <span class="down" title={health.get(name)?.error ?? ''}>{`${name} (down)`}</span> : name}
                  </>
                );
              })}
            </div>
          )}
        </section>
        <section class="charts">
          <figure>
            <BarChart bars={perMinute} title={`Requests per minute, last ${MINUTES} minutes (newest ${SAMPLE} executions)`} />
            <figcaption>Requests per minute</figcaption>
          </figure>
          {counters === undefined ? null : (
            <figure>
              <Gauge value={lookups === 0 ? undefined : (prefetch['hits'] ?? 0) / lookups} title="Prefetch hit rate: intents whose search was ready when they closed" />
              <figcaption>{`Prefetch hits: ${prefetch['hits'] ?? 0} of ${lookups} intents (this replica)`}</figcaption>
            </figure>
          )}
          {counters === undefined ? null : (
            <figure>
              <Gauge value={intents === 0 ? undefined : (resolution['resolved'] ?? 0) / intents} title="Resolution rate: intents whose call ran" />
              <figcaption>{`Intents resolved: ${resolution['resolved'] ?? 0} of ${intents}; asked back ${resolution['asked_back'] ?? 0}, unresolved ${resolution['unresolved'] ?? 0} (this replica)`}</figcaption>
            </figure>
          )}
        </section>
        <h2>Running now</h2>
        {live.length === 0 ? <p class="empty">Nothing runs.</p> : <ExecutionTable rows={live} />}
      </>,
    );
  });
}
