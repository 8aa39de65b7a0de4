/** What one size's child process reports to the scale bench (bench/scale/one-size.ts → run-scale.ts). */

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export interface SizeResult {
  tools: number;
  /** Building the synthetic Tool objects (not part of the index). */
  catalog_ms: number;
  /** The whole index build: table (derive + write + compact + full-text index) plus the ANN index. */
  index_build_ms: number;
  table_build_ms: number;
  /** Deriving vectors (template + noise), inside table_build_ms. */
  derive_ms: number;
  ann_index: boolean;
  /** A sync that only builds the ANN index (its no-op diff included); null below the threshold. */
  ann_index_build_ms: number | null;
  /** A sync with nothing to change: the start-up cost of a gateway over this catalog. */
  noop_sync_ms: number;
  /** The first (warm-up) resolution, which loads the in-memory vectors below the ANN threshold. */
  first_query_ms: number;
  intents: number;
  latency_ms: Percentiles;
  search_ms: Percentiles;
  embed_ms: Percentiles;
  fill_ms: Percentiles;
  /** Sanity, not accuracy: share of intents whose first candidate is the gold tool or one of its variants. */
  family_top1: number;
  resolved_rate: number;
  rss_after_build_mb: number;
  rss_after_queries_mb: number;
  peak_rss_mb: number;
  disk_mb: number;
  /** The child's whole run, model load and clean-up included. */
  wall_ms: number;
  notes: string[];
}

export type ChildMessage = { type: 'phase'; phase: string } | { type: 'result'; result: SizeResult };
