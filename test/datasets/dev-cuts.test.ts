import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchCase } from '../../src/datasets/case-file.js';
import { DEV_CUTS } from '../../src/datasets/dev-cuts.js';
import { findDatasets, type Dataset } from '../../src/datasets/find-datasets.js';
import { readSplit } from '../../src/datasets/read-split.js';

const root = mkdtempSync(path.join(tmpdir(), 'kiwi-dev-cuts-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function folder(name: string, files: Record<string, Array<Record<string, unknown>>>): string {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'zoo'), { recursive: true });
  writeFileSync(path.join(dir, 'zoo', 'catalog.jsonl'), '{"name":"t","description":"","parameters":{"type":"object","properties":{}}}\n');
  for (const [file, lines] of Object.entries(files)) writeFileSync(path.join(dir, 'zoo', file), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return dir;
}

const one = (id: string, domain?: string) => ({ id, intent: id, calls: [{ name: 't', arguments: {} }], ...(domain ? { domain } : {}) });
const two = (id: string, domain: string) => ({ id, intent: id, calls: [{ name: 't', arguments: {} }, { name: 't', arguments: {} }], domain });
const cuts = { zoo: { field: 'domain', dev: ['a', 'c'] } };

async function splitCases(dataset: Dataset): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const s of dataset.splits) out[s.name] = (await readSplit(s)).map((c) => c.id);
  return out;
}

describe('a dev split cut by domain', () => {
  it('takes the named domains from every case file, and leaves each file the rest', async () => {
    const dir = folder('cut', {
      'test.jsonl': [one('t1', 'a'), one('t2', 'b'), one('t3', 'c'), one('t4', 'd')],
      'multi.jsonl': [two('m1', 'b'), two('m2', 'c')],
    });
    const [zoo] = await findDatasets(dir, { devCuts: cuts });
    expect(zoo?.splits.map((s) => s.name)).toEqual(['dev', 'test', 'multi']);
    expect(await splitCases(zoo as Dataset)).toEqual({ dev: ['t1', 't3', 'm2'], test: ['t2', 't4'], multi: ['m1'] });
  });

  it('leaves a dataset without a cut as its files are', async () => {
    const dir = folder('uncut', { 'test.jsonl': [one('t1', 'a'), one('t2', 'b')] });
    const [zoo] = await findDatasets(dir, { devCuts: {} });
    expect(await splitCases(zoo as Dataset)).toEqual({ test: ['t1', 't2'] });
  });

  it('refuses a case it cannot place, a dev domain no case has, and a dataset with a dev file as well', async () => {
    const [missing] = await findDatasets(folder('missing', { 'test.jsonl': [one('t1', 'a'), one('t2'), one('t3', 'c')] }), { devCuts: cuts });
    await expect(readSplit(missing?.splits[0] as Dataset['splits'][number])).rejects.toThrow(/test\.jsonl: case t2 has no "domain" field, so the dev split \(cut by domain, src\/datasets\/dev-cuts\.ts\) cannot place it/);
    const [short] = await findDatasets(folder('short', { 'test.jsonl': [one('t1', 'a'), one('t2', 'b')] }), { devCuts: cuts });
    await expect(readSplit(short?.splits[0] as Dataset['splits'][number])).rejects.toThrow(/no case has domain "c", named for dev in src\/datasets\/dev-cuts\.ts; found a, b/);
    // The held-out side reads one file, which may lack a dev domain: that is no error.
    expect((await readSplit(short?.splits[1] as Dataset['splits'][number])).map((c) => c.id)).toEqual(['t2']);
    await expect(findDatasets(folder('both', { 'dev.jsonl': [one('d1', 'a')], 'test.jsonl': [one('t1', 'b')] }), { devCuts: cuts })).rejects.toThrow(/zoo has a dev\.jsonl and a dev cut .* too: keep one/);
  });
});

// The shipped cuts against the shipped data, where the checkout sits beside shared/ (as `kiwi model train` expects).
const SHARED = fileURLToPath(new URL('../../../shared/datasets', import.meta.url));

describe.skipIf(!existsSync(path.join(SHARED, 'callnavi')) || !existsSync(path.join(SHARED, 'nestful')))('the shipped dev cuts (shared/datasets)', () => {
  const read = async (dataset: string): Promise<Record<string, BenchCase[]>> => {
    const found = (await findDatasets(SHARED)).find((d) => d.name === dataset) as Dataset;
    return Object.fromEntries(await Promise.all(found.splits.map(async (s) => [s.name, await readSplit(s)] as const)));
  };
  const everyThirdByName = (values: Iterable<string>) => [...new Set(values)].sort((a, b) => a.localeCompare(b)).filter((_, i) => i % 3 === 0);

  for (const [dataset, cut] of Object.entries(DEV_CUTS)) {
    it(`${dataset}: dev is every third ${cut.field} by name, and no case is on both sides`, async () => {
      const splits = await read(dataset);
      const all = Object.values(splits).flat();
      expect(cut.dev).toEqual(everyThirdByName(all.map((c) => c.groups[cut.field] as string)));
      expect(new Set((splits['dev'] ?? []).map((c) => c.groups[cut.field]))).toEqual(new Set(cut.dev));
      for (const [name, cases] of Object.entries(splits)) if (name !== 'dev') expect(cases.filter((c) => cut.dev.includes(c.groups[cut.field] as string))).toEqual([]);
      const ids = all.map((c) => `${c.file}:${c.id}`);
      expect(new Set(ids).size).toBe(ids.length);
    });
  }

  it('counts the cases on each side', async () => {
    const count = (splits: Record<string, BenchCase[]>) => Object.fromEntries(Object.entries(splits).map(([name, cases]) => [name, cases.length]));
    expect(count(await read('callnavi'))).toEqual({ dev: 294, test: 253, multi: 149 });
    expect(count(await read('nestful'))).toEqual({ dev: 69, multi: 169 });
  });
});
