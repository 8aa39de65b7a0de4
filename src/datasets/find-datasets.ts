/** The datasets of a folder laid out as shared/datasets is: one folder per dataset, a catalog.jsonl and case files beside it. */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

export interface DatasetSplit {
  /** The case file's name without `.jsonl` (`dev`, `test_real`). */
  name: string;
  file: string;
}

export interface Dataset {
  name: string;
  catalog: string;
  splits: DatasetSplit[];
}

/**
 * Every sub-folder of `dir` that has a catalog.jsonl, with its other `.jsonl` files as splits:
 * `dev` first, then `test…`, then the rest, by name. Folders without a catalog are passed over.
 */
export async function findDatasets(dir: string): Promise<Dataset[]> {
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
    const splits = files.map((f) => ({ name: f.name.slice(0, -'.jsonl'.length), file: path.join(folder, f.name) })).sort((a, b) => splitOrder(a.name) - splitOrder(b.name) || a.name.localeCompare(b.name));
    if (splits.length > 0) datasets.push({ name: entry.name, catalog, splits });
  }
  if (datasets.length === 0) throw new Error(`no dataset in ${dir}: expected folders each holding catalog.jsonl and at least one case file (shared/bench/FORMAT.md)`);
  return datasets;
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
