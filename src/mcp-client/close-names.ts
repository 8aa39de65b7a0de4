/** Names from `candidates` close to `wanted` (typos, case, a missing prefix), best first; for "did you mean" messages. */
export function closeNames(wanted: string, candidates: readonly string[], limit = 5): string[] {
  const target = wanted.toLowerCase();
  const scored: Array<{ name: string; score: number }> = [];
  for (const name of candidates) {
    const lower = name.toLowerCase();
    const distance = editDistance(target, lower);
    const contains = lower.includes(target) || target.includes(lower);
    const allowed = Math.max(2, Math.floor(Math.max(target.length, lower.length) / 3));
    if (distance <= allowed || contains) scored.push({ name, score: contains ? Math.min(distance, 1) : distance });
  }
  scored.sort((a, b) => a.score - b.score || a.name.localeCompare(b.name));
  return scored.slice(0, limit).map((entry) => entry.name);
}

// Tool names are short; inputs are capped so the quadratic table stays small.
function editDistance(a: string, b: string): number {
  const x = a.slice(0, 128);
  const y = b.slice(0, 128);
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const current = [i];
    for (let j = 1; j <= y.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (x[i - 1] === y[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[y.length] ?? 0;
}
