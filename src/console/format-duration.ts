/**
 * A duration as a person reads it, the console's one way of showing time taken (p50/p99, uptime,
 * how long a call ran or waited): `850 ms`, `12.4 s`, `2 min 0 s`, `3 h 5 min`, `2 d 4 h`. Each
 * unit is rounded before it is split, so 59,999 ms is `1 min 0 s`, never `60.0 s`.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (Math.round(ms) < SECOND) return `${Math.round(ms)} ms`;
  const tenths = Math.round(ms / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)} s`;
  const seconds = Math.round(ms / SECOND);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  const minutes = Math.round(ms / MINUTE);
  if (minutes < 24 * 60) return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  const hours = Math.round(ms / HOUR);
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}
