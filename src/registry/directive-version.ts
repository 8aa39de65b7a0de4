/**
 * Directive versions as numbers: `1`, `1.2`, `1.2.3` (a leading `v` is read too), compared part by
 * part with missing parts as 0 (`1.2` equals `1.2.0`). A version that is not numbers cannot be
 * ordered, so it cannot say which of two files of one directive runs.
 */

export function parseVersion(text: string): number[] | undefined {
  const match = /^v?(\d+(?:\.\d+)*)$/.exec(text.trim());
  if (match === null) return undefined;
  const parts = (match[1] as string).split('.').map(Number);
  return parts.every(Number.isSafeInteger) ? parts : undefined;
}

/** Negative when a is lower, positive when higher, 0 when equal; undefined when either is not numbers. */
export function compareVersions(a: string, b: string): number | undefined {
  const x = parseVersion(a);
  const y = parseVersion(b);
  if (x === undefined || y === undefined) return undefined;
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
