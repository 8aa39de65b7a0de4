import type { Labels, MetricFamily } from '../../base/metric-family.js';

/**
 * Prometheus' text exposition format, version 0.0.4: what Prometheus and every scraper that
 * speaks it read. Each family: `# HELP`, `# TYPE`, then one line per sample; a histogram's as
 * `_bucket{le}` (cumulative, ending with +Inf), `_sum` and `_count`.
 */

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function renderPrometheus(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${family.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${family.name} ${family.type}`);
    if (family.type === 'histogram') {
      for (const s of family.samples) {
        for (const b of s.buckets) lines.push(`${family.name}_bucket${labels({ ...s.labels, le: number(b.le) })} ${number(b.count)}`);
        lines.push(`${family.name}_bucket${labels({ ...s.labels, le: '+Inf' })} ${number(s.count)}`, `${family.name}_sum${labels(s.labels)} ${number(s.sum)}`, `${family.name}_count${labels(s.labels)} ${number(s.count)}`);
      }
    } else {
      for (const s of family.samples) lines.push(`${family.name}${labels(s.labels)} ${number(s.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

function labels(set: Labels | undefined): string {
  const entries = Object.entries(set ?? {});
  if (entries.length === 0) return '';
  return `{${entries.map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}`;
}

function number(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return String(n);
}
