/**
 * `npm run bench -- multi-step`: how intents are split into ordered steps (split-steps.ts,
 * step-plan.ts) on every shipped dataset's catalog, with the real resolver. Single-call intents
 * (dev cases with one gold call) must stay one step: a split there runs a wrong sequence, so
 * their split rate is the number to keep near 0. Multi-call intents (a `multi` split, and dev
 * cases with two or more gold calls) are scored on how many are split at all, and how many have
 * steps whose resolved tools cover every gold tool. Each rule is reported alone: sequencing words
 * only, and with a plain "and" between two catalog actions that resolve on their own.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { catalogActionWords, type SplitOptions } from '../../src/resolver/split-steps.js';
import { planSteps, type StepPlan } from '../../src/resolver/step-plan.js';
import type { StagedResolver } from '../../src/resolver/types.js';
import { spreadSample, type BenchCase } from '../../src/datasets/case-file.js';
import { importCatalog, type ImportedCatalog } from '../../src/datasets/catalog-file.js';
import { findDatasets } from '../../src/datasets/find-datasets.js';
import { readSplit } from '../../src/datasets/read-split.js';
import { openCatalogResolver, parseCount } from './resolve-catalog.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const USAGE = 'npm run bench -- multi-step [--datasets DIR] [--limit N] [--embedder use-lite|static] [--show N]';

interface Tally {
  cases: number;
  split: number;
  refused: number;
  covered: number;
}

export async function runMultiStepBench(argv: string[]): Promise<void> {
  const { values } = parseOptions(argv);
  const limit = parseCount('limit', values.limit);
  const show = parseCount('show', values.show) ?? 0;
  const datasetsDir = path.resolve(values.datasets ?? path.resolve(REPO_ROOT, '..', 'shared', 'datasets'));
  const rows: string[] = ['| dataset | cases | rule | split ≥ 2 | refused (cap) | steps cover every gold tool |', '|---|---|---|---|---|---|'];
  for (const dataset of await findDatasets(datasetsDir)) {
    const dev = dataset.splits.find((s) => s.name === 'dev');
    const multi = dataset.splits.find((s) => s.name === 'multi');
    const devCases = dev ? await readSplit(dev) : [];
    const groups: Array<[string, BenchCase[]]> = [
      ['single-call (dev)', devCases.filter((c) => c.calls.length === 1)],
      ['multi-call (dev)', devCases.filter((c) => c.calls.length >= 2)],
      ['multi-call (multi)', multi ? await readSplit(multi) : []],
    ];
    const catalog = await importCatalog(dataset.catalog);
    const opened = await openCatalogResolver({ catalog, settings: {}, label: dataset.name, embedder: values.embedder });
    try {
      const rules: Array<[string, SplitOptions]> = [
        ['sequencing words', {}],
        ['+ plain "and"', { actionWords: catalogActionWords(catalog.tools) }],
      ];
      for (const [group, all] of groups) {
        if (all.length === 0) continue;
        const cases = limit === undefined ? all : spreadSample(all, limit);
        for (const [rule, options] of rules) {
          const tally = await score(opened.resolver, catalog, cases, options, show, `${dataset.name} ${group} ${rule}`);
          rows.push(`| ${dataset.name} | ${group}: ${tally.cases} | ${rule} | ${pct(tally.split, tally.cases)} | ${pct(tally.refused, tally.cases)} | ${group.startsWith('single') ? '—' : pct(tally.covered, tally.cases)} |`);
        }
      }
    } finally {
      await opened.close();
    }
  }
  console.log(rows.join('\n'));
}

async function score(resolver: StagedResolver, catalog: ImportedCatalog, cases: readonly BenchCase[], options: SplitOptions, show: number, label: string): Promise<Tally> {
  const tally: Tally = { cases: cases.length, split: 0, refused: 0, covered: 0 };
  let shown = 0;
  for (const c of cases) {
    const plan: StepPlan = await planSteps(c.intent, (text) => resolver.resolve(text), options);
    if (plan.kind === 'refused') tally.refused++;
    if (plan.kind !== 'steps') continue;
    tally.split++;
    if (shown++ < show) console.error(`${label}: ${JSON.stringify(c.intent)}\n  -> ${plan.steps.map((s) => JSON.stringify(s.text)).join(' | ')}`);
    const tools = new Set<string>();
    for (const step of plan.steps) {
      const resolution = step.resolution ?? (await resolver.resolve(step.text));
      if (resolution.status === 'resolved') tools.add(catalog.names.get(resolution.call.tool) ?? resolution.call.tool);
    }
    if (c.calls.length >= 2 && c.calls.every((call) => tools.has(call.name))) tally.covered++;
  }
  return tally;
}

function pct(n: number, of: number): string {
  return of === 0 ? '—' : `${((100 * n) / of).toFixed(1)}% (${n})`;
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: { datasets: { type: 'string' }, limit: { type: 'string' }, embedder: { type: 'string' }, show: { type: 'string' } }, strict: true });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : error}; usage: ${USAGE}`);
  }
}
