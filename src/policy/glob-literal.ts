/** Characters that make a policy glob's path segment a pattern (picomatch's wildcards, classes, braces and extglobs). */
const WILDCARD = /[*?[\]{}()!+@]/u;

/**
 * The segments of a `/`-separated glob before its first segment with a wildcard:
 * `src/gen/**` → `['src', 'gen']`, `.git/config` → `['.git', 'config']`, `**\/.env` → `[]`.
 */
export function literalParts(glob: string): string[] {
  const parts: string[] = [];
  for (const part of glob.split('/')) {
    if (WILDCARD.test(part)) break;
    parts.push(part);
  }
  return parts;
}
