/**
 * Metrics as plain values, the way Prometheus groups them: a family is one metric name with its
 * help, its type and one sample per set of labels. The kernel and the gateway fill them; the HTTP
 * edge writes them out (http/metrics/prometheus-text.ts).
 */

export type Labels = Readonly<Record<string, string>>;

export interface ValueSample {
  labels?: Labels;
  value: number;
}

export interface HistogramSample {
  labels?: Labels;
  /** Cumulative: how many observations were at most `le`, in increasing `le` (the +Inf bucket is `count`). */
  buckets: readonly { le: number; count: number }[];
  sum: number;
  count: number;
}

export type MetricFamily =
  | { name: string; help: string; type: 'counter' | 'gauge'; samples: readonly ValueSample[] }
  | { name: string; help: string; type: 'histogram'; samples: readonly HistogramSample[] };
