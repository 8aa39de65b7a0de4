import type { Context } from 'hono';
import type { Kernel } from '../../kernel/open-kernel.js';
import type { MetricFamily } from '../../base/metric-family.js';
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from './prometheus-text.js';

/**
 * GET /metrics, in the form the caller asks for: Prometheus text for scrapers (Prometheus sends
 * `Accept: application/openmetrics-text…, text/plain…`), the gateway's JSON counters for
 * everyone else (`kiwi stats`, a plain fetch, curl). The text holds the kernel's metrics (its
 * spec's §16, `rebuno_*`, and its database's size) and the gateway's own counters (`kiwi_*`); the
 * JSON has the database's size under `kernel`, left out while the database does not answer.
 */

export interface MetricsRouteDeps {
  /** The gateway's counters as JSON; absent, every caller gets the Prometheus text. */
  json?: () => Record<string, unknown>;
  /** The gateway's counters as Prometheus families. */
  families?: () => MetricFamily[];
  kernel?: () => Promise<Kernel>;
}

const TEXT_TYPES = new Set(['text/plain', 'application/openmetrics-text']);

export function createMetricsHandler(deps: MetricsRouteDeps): (c: Context) => Promise<Response> {
  return async (c) => {
    c.header('vary', 'accept');
    const json = deps.json;
    if (json !== undefined && !prefersPrometheus(c.req.header('accept'))) {
      const bytes = await deps.kernel?.().then((k) => k.databaseBytes()).catch(() => undefined);
      return c.json({ ...json(), ...(bytes === undefined ? {} : { kernel: { database_bytes: bytes } }) });
    }
    const families: MetricFamily[] = [];
    if (deps.kernel !== undefined) {
      try {
        families.push(...(await (await deps.kernel()).metricFamilies()));
      } catch {
        // A scrape that fails is what tells Prometheus (its `up` metric) that something is wrong.
        return c.text('service unavailable: the kernel database is not reachable\n', 503);
      }
    }
    families.push(...(deps.families?.() ?? []));
    return c.body(renderPrometheus(families), 200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
  };
}

/**
 * True when the Accept header ranks Prometheus text (text/plain or OpenMetrics) above JSON. A
 * wildcard range chooses neither: a caller that names neither type gets JSON.
 */
export function prefersPrometheus(accept: string | undefined): boolean {
  let text = 0;
  let json = 0;
  for (const range of (accept ?? '').slice(0, 2048).split(',')) {
    const [type = '', ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (!Number.isFinite(weight)) continue;
    if (TEXT_TYPES.has(type)) text = Math.max(text, weight);
    else if (type === 'application/json') json = Math.max(json, weight);
  }
  return text > 0 && text > json;
}
