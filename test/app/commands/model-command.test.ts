import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/app/run-cli.js';
import { loadResolverModel } from '../../../src/resolver/learned-model.js';
import { FIXTURES } from '../../helpers/temp-project.js';

const root = mkdtempSync(path.join(tmpdir(), 'kiwi-model-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function kiwi(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env: {}, cwd: root, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('kiwi model (the static embedder, three small datasets)', () => {
  it('trains on the dev splits, writes the model and its card, and shows it', async () => {
    // Each dataset is left out of a fit whose gates are set leave-one-out on the others: three at least. The third is the weather one again, under another name.
    const datasets = path.join(root, 'three');
    cpSync(path.join(FIXTURES, 'datasets'), datasets, { recursive: true });
    cpSync(path.join(FIXTURES, 'datasets', 'weather'), path.join(datasets, 'weather-again'), { recursive: true });
    const r = await kiwi('model', 'train', '--datasets', datasets, '--out', 'model.json', '--embedder', 'static');
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/files: 4 tools, 8 one-call intents of 8 and 2 with their tool taken out/);
    expect(r.err).toMatch(/weather: 4 tools, 8 one-call intents of 8 and 2 with their tool taken out/);
    expect(r.err).toMatch(/skipped nodev: no dev\.jsonl/);
    // A dev split of call sequences only: read, but no row, and the card says why.
    expect(r.err).toMatch(/skipped trips: its dev split gives no row: none of its 2 cases has a single gold call/);
    expect(r.out).toMatch(/wrote .*model\.json and .*model\.md/);

    const model = await loadResolverModel(path.join(root, 'model.json'));
    expect(model.embedder).toMatch(/^static/);
    expect(model.gates.map((g) => g.precision)).toContain(0.95);
    expect(model.card).toMatchObject({ trained_on: { files: { split: 'dev', intents: 8, tool_removed: 2 }, weather: { split: 'dev', intents: 8, tool_removed: 2 } } });
    expect(Object.keys((model.card as { trained_on: object }).trained_on)).toEqual(['files', 'weather', 'weather-again']);
    // Every fold kept, each target's gate fitted without it and what ran on it; 8 intents run too few calls to show any target.
    expect(model.leave_one_out?.folds.map((f) => f.dataset)).toEqual(['files', 'weather', 'weather-again']);
    expect(model.leave_one_out?.min_executed).toBe(20);
    expect(model.gates.every((g) => g.threshold === null)).toBe(true);
    expect((model.card as { passed_over: string[] }).passed_over).toEqual([expect.stringMatching(/^nodev: no dev\.jsonl/), expect.stringMatching(/^trips: its dev split gives no row/)]);
    expect(readFileSync(path.join(root, 'model.md'), 'utf8')).toMatch(/^# Resolver confidence \(model\.json\)[\s\S]*files\/dev: 8 one-call intents[\s\S]*passed over: trips: [\s\S]*Offered targets \(target_precision → calibrated confidence a call needs\): none\.[\s\S]*\n0\.95 +(none|\d\.\d{3}) +/);

    const shown = await kiwi('model', 'show', '--model', 'model.json');
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(/^target +gate +files +weather +weather-again +offered$/m);
    const json = JSON.parse((await kiwi('model', 'show', '--model', 'model.json', '--json')).out) as { embedder: string };
    expect(json.embedder).toBe(model.embedder);
  }, 120_000);

  it('shows the shipped model by default', async () => {
    const r = await kiwi('model', 'show');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/Embedder: use-lite-512/);
    expect(r.out).toMatch(/^target +gate +callnavi +metatool +seal-tools +toolalpaca +offered$/m);
  });

  it('says what to fix for bad flags, one dataset, and a missing model', async () => {
    expect((await kiwi('model')).err).toMatch(/usage: kiwi model train/);
    expect((await kiwi('model', 'train', '--embedder', 'word2vec')).err).toMatch(/--embedder word2vec: write use-lite \(the default\) or static/);
    expect((await kiwi('model', 'train', '--limit', '0')).err).toMatch(/--limit 0: write a whole number of 1 or more/);
    expect((await kiwi('model', 'show', '--out', 'x.json')).err).toMatch(/--out is for train/);
    expect((await kiwi('model', 'train', '--json')).err).toMatch(/--model and --json are for show/);
    cpSync(path.join(FIXTURES, 'datasets', 'weather'), path.join(root, 'one', 'weather'), { recursive: true });
    const one = await kiwi('model', 'train', '--datasets', path.join(root, 'one'), '--embedder', 'static', '--out', 'x.json');
    expect(one.code).not.toBe(0);
    expect(one.err).toMatch(/training needs rows from the dev split of at least three datasets: each is left out of a fit whose gates are set on the others, one left out at a time; found weather/);
    expect(existsSync(path.join(root, 'x.json'))).toBe(false);
    const missing = await kiwi('model', 'show', '--model', 'nothing.json');
    expect(missing.code).not.toBe(0);
    expect(missing.err).toMatch(/cannot read the resolver model .*nothing\.json \(ENOENT\); rebuild it with `kiwi model train`/);
    const empty = await kiwi('model', 'train', '--datasets', path.join(root, 'no-such-folder'), '--embedder', 'static');
    expect(empty.err).toMatch(/cannot read the datasets folder .*no-such-folder \(it does not exist\)/);
  });
});
