import { round } from '../stats.js';
import type { SizeResult } from './size-result.js';

/**
 * What a size larger than any measured one would take on this machine, extrapolated from the
 * measured sizes: build times by the power law through the two largest (never flatter than
 * linear: fixed costs make small sizes look cheap), the ANN build as n·log n from its largest
 * measurement, disk and memory linearly. Rough by nature; it decides whether to try, not what to report.
 */
export interface SizeEstimate {
  tools: number;
  /** Catalog, derived vectors, writes, compaction and full-text index. */
  table_build_s: number;
  /** null when no measured size built one (nothing to extrapolate from). */
  ann_build_s: number | null;
  /** The whole child: model load, builds, queries, clean-up. */
  total_s: number | null;
  disk_gb: number;
  peak_rss_gb: number;
  basis: string;
}

export function estimateSize(measured: SizeResult[], tools: number, annThreshold: number): SizeEstimate | null {
  const points = [...measured].sort((a, b) => a.tools - b.tools);
  const [a, b] = points.slice(-2);
  if (!a || !b || a.tools === b.tools) return null;

  const power = (ya: number, yb: number) => {
    const exponent = Math.max(1, Math.log(Math.max(yb, 1) / Math.max(ya, 1)) / Math.log(b.tools / a.tools));
    return yb * (tools / b.tools) ** exponent;
  };
  const linear = (ya: number, yb: number) => yb + ((yb - ya) / (b.tools - a.tools)) * (tools - b.tools);

  const table = power(a.catalog_ms + a.table_build_ms, b.catalog_ms + b.table_build_ms);
  const withAnn = points.filter((p) => p.ann_index_build_ms !== null);
  const annBase = withAnn.at(-1);
  const nlogn = (n: number) => n * Math.log2(n);
  let ann: number | null = 0;
  if (tools >= annThreshold) ann = annBase ? (annBase.ann_index_build_ms as number) * (nlogn(tools) / nlogn(annBase.tools)) : null;
  // What is neither build (model load, queries, clean-up) is taken as it was at the largest size.
  const rest = b.wall_ms - b.catalog_ms - b.table_build_ms - (b.ann_index_build_ms ?? 0);

  return {
    tools,
    table_build_s: round(table / 1000, 0),
    ann_build_s: ann === null ? null : round(ann / 1000, 0),
    total_s: ann === null ? null : round((table + ann + rest) / 1000, 0),
    disk_gb: round(linear(a.disk_mb, b.disk_mb) / 1024, 2),
    peak_rss_gb: round(linear(a.peak_rss_mb, b.peak_rss_mb) / 1024, 2),
    basis: `from ${a.tools} and ${b.tools} tools${annBase ? `; ANN build scaled n·log n from ${annBase.tools}` : ''}`,
  };
}

export function describeEstimate(e: SizeEstimate): string {
  const ann = e.ann_build_s === null ? 'unknown (no measured size built one)' : `${e.ann_build_s} s`;
  const total = e.total_s === null ? 'unknown' : `~${(e.total_s / 60).toFixed(1)} min`;
  return `estimate for ${e.tools} tools (${e.basis}): table build ~${e.table_build_s} s, ANN index build ${ann}, total ${total}, disk ~${e.disk_gb} GB, peak RSS ~${e.peak_rss_gb} GB`;
}
