/** The datasets of a folder laid out as shared/datasets is: one folder per dataset, a catalog.jsonl and case files beside it. */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { DEV_CUTS, type DevCut } from './dev-cuts.js';

/** Part of a split's files: the cases whose `field` is one of `values` (`inside`), or is none of them. */
export interface SplitCut {
  field: string;
  values: readonly string[];
  inside: boolean;
}

export interface DatasetSplit {
  /** The case file's name without `.jsonl` (`dev`, `test_real`), or `dev` for a cut one. */
  name: string;
  /** The case files it is read from: one, or every case file of the dataset for a cut `dev`. */
  files: string[];
  /** Only these cases of the files (dev-cuts.ts); every case when absent. Read it with readSplit. */
  cut?: SplitCut;
}

export interface Dataset {
  name: string;
  catalog: string;
  splits: DatasetSplit[];
}

export interface FindOptions {
  /** Dev splits to cut, by dataset folder name; the shipped ones (dev-cuts.ts) by default. */
  devCuts?: Readonly<Record<string, DevCut>>;
}

/**
 * Every sub-folder of `dir` that has a catalog.jsonl, with its other `.jsonl` files as splits:
 * `dev` first, then `test…`, then the rest, by name. Folders without a catalog are passed over.
 * A dataset with a dev cut gets a `dev` split made of its dev domains' cases, and its files'
 * splits keep the other cases only.
 */
export async function findDatasets(dir: string, options: FindOptions = {}): Promise<Dataset[]> {
  const devCuts = options.devCuts ?? DEV_CUTS;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist' : error instanceof Error ? error.message : String(error);
    throw new Error(`cannot read the datasets folder ${dir} (${why}); pass --datasets DIR, a folder of dataset folders each holding catalog.jsonl and case files (shared/bench/FORMAT.md)`);
  }
  const datasets: Dataset[] = [];
  for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const folder = path.join(dir, entry.name);
    const catalog = path.join(folder, 'catalog.jsonl');
    if (!(await isFile(catalog))) continue;
    const files = (await readdir(folder, { withFileTypes: true })).filter((f) => f.isFile() && f.name.endsWith('.jsonl') && f.name !== 'catalog.jsonl');
    const found = files.map((f) => ({ name: f.name.slice(0, -'.jsonl'.length), files: [path.join(folder, f.name)] })).sort((a, b) => splitOrder(a.name) - splitOrder(b.name) || a.name.localeCompare(b.name));
    const cut = Object.hasOwn(devCuts, entry.name) ? devCuts[entry.name] : undefined;
    const splits = cut ? cutDev(entry.name, found, cut) : found;
    if (splits.length > 0) datasets.push({ name: entry.name, catalog, splits });
  }
  if (datasets.length === 0) throw new Error(`no dataset in ${dir}: expected folders each holding catalog.jsonl and at least one case file (shared/bench/FORMAT.md)`);
  return datasets;
}

/** The dev domains' cases of every file become `dev`, put first; each file's split keeps the rest. */
function cutDev(dataset: string, splits: readonly DatasetSplit[], cut: DevCut): DatasetSplit[] {
  if (splits.some((s) => s.name === 'dev')) throw new Error(`${dataset} has a dev.jsonl and a dev cut (src/datasets/dev-cuts.ts) too: keep one, so that no case is in two splits`);
  if (splits.length === 0 || cut.dev.length === 0) return [...splits];
  const rest = { field: cut.field, values: cut.dev, inside: false };
  return [{ name: 'dev', files: splits.flatMap((s) => s.files), cut: { ...rest, inside: true } }, ...splits.map((s) => ({ ...s, cut: rest }))];
}

function splitOrder(name: string): number {
  if (name === 'dev') return 0;
  return name.startsWith('test') ? 1 : 2;
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}
