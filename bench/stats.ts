/** Nearest-rank percentile of a sample (p in 0..100); 0 for an empty sample. */
export function percentile(sample: number[], p: number): number {
  if (sample.length === 0) return 0;
  const sorted = [...sample].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function peakRssMb(): number {
  // maxRSS is in kilobytes.
  return round(process.resourceUsage().maxRSS / 1024, 1);
}
