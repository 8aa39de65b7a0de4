import { tokenize } from '../../src/embed/static-tokenizer.js';

/**
 * The fitting corpus: package synopses from an `apt-cache dumpavail` dump (the first line of each
 * `Description:` field — a one-line, human-written statement of what a program does, close in
 * register to a tool description). Long descriptions are not used: most dumps carry them only
 * in separate Translation files, and using them when present would make the corpus depend on
 * the machine's apt settings. Deduplicated and sorted, so the order of the dump does not matter.
 */
export interface DebianCorpus {
  packages: number;
  synopses: string[];
}

export function readDebianSynopses(dump: string): DebianCorpus {
  let packages = 0;
  const synopses = new Set<string>();
  for (const line of dump.split('\n')) {
    if (line.startsWith('Package:')) packages++;
    const match = /^Description(?:-en)?:\s*(.*)$/.exec(line);
    const synopsis = match?.[1]?.trim();
    if (synopsis) synopses.add(synopsis);
  }
  return { packages, synopses: [...synopses].sort() };
}

/** How often each word occurs in the texts (every occurrence counts). */
export function countWords(texts: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) for (const word of tokenize(text)) counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

/** The `max` most frequent words seen at least `minCount` times; ties in alphabetical order, so the choice is deterministic. */
export function chooseVocabulary(counts: Map<string, number>, max: number, minCount = 1): string[] {
  return [...counts.entries()]
    .filter(([, n]) => n >= minCount)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, max)
    .map(([word]) => word);
}
