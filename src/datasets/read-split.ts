/** A dataset split's cases: its files read, and only the part its cut names kept. */
import { readCases, type BenchCase } from './case-file.js';
import type { DatasetSplit } from './find-datasets.js';

/**
 * Reads the split. A case without the cut's field cannot be placed on either side, and a value
 * named for dev that no case of the dataset has is most likely a misspelling that would leave dev
 * short: both stop the run instead of moving cases silently.
 */
export async function readSplit(split: DatasetSplit): Promise<BenchCase[]> {
  const cases = await readCases(split.files);
  const cut = split.cut;
  if (!cut) return cases;
  const named = new Set(cut.values);
  const seen = new Set<string>();
  const kept = cases.filter((c) => {
    const value = c.groups[cut.field];
    if (value === undefined) throw new Error(`${c.file}: case ${c.id} has no "${cut.field}" field, so the ${split.name} split (cut by ${cut.field}, src/datasets/dev-cuts.ts) cannot place it`);
    seen.add(value);
    return named.has(value) === cut.inside;
  });
  // Only the cut side reads every file of the dataset; a file of the other side may lack a domain.
  const unknown = cut.inside ? cut.values.filter((v) => !seen.has(v)) : [];
  if (unknown.length > 0) throw new Error(`${split.files.join(', ')}: no case has ${cut.field} ${unknown.map((v) => JSON.stringify(v)).join(', ')}, named for dev in src/datasets/dev-cuts.ts; found ${[...seen].sort().join(', ')}`);
  return kept;
}
