/** The closest option, if it is close enough to be a plausible typo. */
export function didYouMean(input: string, options: readonly string[]): string | undefined {
  const needle = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const option of options) {
    const distance = editDistance(needle, option.toLowerCase());
    if (distance < bestDistance) {
      best = option;
      bestDistance = distance;
    }
  }
  const limit = Math.max(1, Math.floor(needle.length / 3));
  return bestDistance <= limit || (best !== undefined && best.toLowerCase().startsWith(needle) && needle.length >= 3)
    ? best
    : undefined;
}

/** ` (did you mean "x"?)`, or nothing. */
export function didYouMeanSuffix(input: string, options: readonly string[]): string {
  const guess = didYouMean(input, options);
  return guess === undefined ? '' : ` (did you mean "${guess}"?)`;
}

function editDistance(a: string, b: string): number {
  if (a.length > 64 || b.length > 64) return Math.abs(a.length - b.length) + 64;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
