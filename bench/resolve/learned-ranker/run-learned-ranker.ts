/**
 * `npm run bench -- learned-ranker`: the experiment behind the shipped model's shape. A logistic
 * ranker over each intent's first candidates and a logistic confidence over the winner's features
 * (candidate-features.ts) are fitted on the other datasets' dev splits and scored on each dataset
 * left out, against the retrieval order and the resolver's own whole-call confidence. It is a
 * bench, not the product, because it lost (see the README's "The learned confidence").
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spreadSample, type BenchCase } from '../../../src/datasets/case-file.js';
import { importCatalog } from '../../../src/datasets/catalog-file.js';
import { findDatasets } from '../../../src/datasets/find-datasets.js';
import { readSplit } from '../../../src/datasets/read-split.js';
import { openResolverRuntime } from '../../../src/resolver/resolver-runtime.js';
import { fillArguments } from '../../../src/resolver/fill-args.js';
import { fitLogistic, predict, type LogisticModel } from '../../../src/resolver/logistic.js';
import { DEFAULT_RESOLVER_SETTINGS, resolvableTools } from '../../../src/resolver/resolver.js';
import { callMatches } from '../../../src/resolver/score-call.js';
import { GOLD_REMOVED_EVERY, trainingRetrievals } from '../../../src/resolver/train/collect-rows.js';
import type { Tool } from '../../../src/registry/types.js';
import { createProgress } from '../../progress.js';
import { round } from '../../stats.js';
import { catalogSchemas, parseCount } from '../resolve-catalog.js';
import { candidateRows, catalogTerms } from './candidate-features.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const K = 10;

interface Row {
  features: number[];
  toolRight: boolean;
  callRight: boolean;
}

interface Case {
  dataset: string;
  split: string;
  goldRemoved: boolean;
  rows: Row[];
  /** The resolver's own whole-call confidence; -1 when it made no call. */
  raw: number;
  rawRight: boolean;
}

export async function runLearnedRankerBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { datasets: { type: 'string' }, out: { type: 'string' }, limit: { type: 'string' } }, strict: true });
  const limit = parseCount('limit', values.limit);
  const datasets = await findDatasets(path.resolve(values.datasets ?? path.join(REPO_ROOT, '..', 'shared', 'datasets')));
  const cases: Case[] = [];
  for (const dataset of datasets) {
    const catalog = await importCatalog(dataset.catalog);
    const tools = resolvableTools(catalog.tools);
    const terms = catalogTerms(tools);
    const nameOf = (id: string): string => catalog.names.get(id) ?? id;
    const schemas = catalogSchemas(catalog);
    const dir = await mkdtemp(path.join(tmpdir(), 'kiwi-bench-ranker-'));
    const runtime = await openResolverRuntime({ tools: catalog.tools, indexDir: dir, model: null, settings: { targetPrecision: 0 } });
    try {
      await runtime.sync();
      for (const split of dataset.splits) {
        const all = (await readSplit(split)).filter((c) => c.calls.length === 1);
        const chosen = limit === undefined ? all : spreadSample(all, limit);
        const tick = createProgress('').counter(`${dataset.name}/${split.name}`);
        for (const [i, c] of chosen.entries()) {
          const gold = c.calls[0] as BenchCase['calls'][number];
          const retrieval = await runtime.resolver.retrieve(c.intent);
          if (retrieval.named) continue;
          const fills = new Map<string, ReturnType<typeof fillArguments>>();
          const fill = (tool: Tool) => fills.get(tool.id) ?? fills.set(tool.id, fillArguments(retrieval.intent, tool)).get(tool.id) as ReturnType<typeof fillArguments>;
          const right = (tool: string, args: Record<string, unknown>) => callMatches(gold, { tool: nameOf(tool), arguments: args }, { schema: schemas.get(gold.name) ?? [] });
          for (const { goldRemoved, retrieval: seen } of trainingRetrievals(retrieval, i, (tool) => nameOf(tool) === gold.name, DEFAULT_RESOLVER_SETTINGS)) {
            const rows = candidateRows(retrieval.intent, seen.candidates, { tools, terms, fill }, K).map((r) => {
              const toolRight = !goldRemoved && nameOf(r.tool.id) === gold.name;
              return { features: r.features, toolRight, callRight: toolRight && r.filled.missing.length === 0 && right(r.tool.id, r.filled.arguments) };
            });
            const own = await runtime.resolver.complete(c.intent, seen, { rulesOnly: true });
            const raw = own.status === 'resolved' ? own.confidence : -1;
            cases.push({ dataset: dataset.name, split: split.name, goldRemoved, rows, raw, rawRight: !goldRemoved && own.status === 'resolved' && right(own.call.tool, own.call.arguments) });
          }
          tick(i + 1, chosen.length);
        }
      }
    } finally {
      await runtime.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  const table = leaveOneOut(cases);
  console.log(`\nlearned ranker and confidence, leave-one-dataset-out (fitted on the other datasets' dev splits; one-call cases, every ${GOLD_REMOVED_EVERY}th again without its tool):`);
  console.log(`${'dataset/split'.padEnd(28)} ${'top-1'.padStart(6)} ${'ranked'.padStart(7)} ${'call'.padStart(6)} ${'ranked'.padStart(7)} ${'P@½ own'.padStart(8)} ${'P@½ learned'.padStart(12)}`);
  const f = (x: number | null, w: number) => (x === null ? '-' : x.toFixed(3)).padStart(w);
  for (const r of table) console.log(`${r.split.padEnd(28)} ${f(r.top1, 6)} ${f(r.rankedTop1, 7)} ${f(r.call, 6)} ${f(r.rankedCall, 7)} ${f(r.ownPrecisionAtHalf, 8)} ${f(r.learnedPrecisionAtHalf, 12)}`);
  console.log('top-1/call: retrieval order; ranked: after the learned ranker; P@½: executed precision when the most confident half of the fitting intents run (own: the resolver\'s whole-call confidence; learned: the learned confidence)');
  if (values.out) await writeFile(values.out, `${JSON.stringify({ bench: 'learned-ranker', candidates: K, rows: table }, null, 2)}\n`);
}

const ALL_WEIGHT = (cases: readonly Case[]): Map<string, number> => {
  const counts = new Map<string, number>();
  for (const c of cases) counts.set(c.dataset, (counts.get(c.dataset) ?? 0) + 1);
  return new Map([...counts].map(([d, n]) => [d, cases.length / counts.size / n]));
};

function ranked(ranker: LogisticModel, rows: readonly Row[]): Array<{ row: Row; p: number }> {
  return rows.map((row) => ({ row, p: predict(ranker, row.features) })).sort((a, b) => b.p - a.p);
}

function confidenceFeatures(list: ReadonlyArray<{ row: Row; p: number }>): number[] {
  const [first, second] = list;
  return [...(first?.row.features ?? []), first?.p ?? 0, (first?.p ?? 0) - (second?.p ?? 0)];
}

function fit(train: readonly Case[]): { ranker: LogisticModel; confidence: LogisticModel } {
  const weight = ALL_WEIGHT(train);
  const withGold = train.filter((c) => !c.goldRemoved && c.rows.some((r) => r.toolRight));
  const rows = withGold.flatMap((c) => c.rows.map((r) => ({ r, w: (weight.get(c.dataset) as number) / c.rows.length })));
  const ranker = fitLogistic(rows.map((x) => x.r.features), rows.map((x) => (x.r.toolRight ? 1 : 0)), { rowWeights: rows.map((x) => x.w) });
  const usable = train.filter((c) => c.rows.length > 0);
  const lists = usable.map((c) => ranked(ranker, c.rows));
  const confidence = fitLogistic(lists.map(confidenceFeatures), lists.map((l) => (l[0]?.row.callRight ? 1 : 0)), { rowWeights: usable.map((c) => weight.get(c.dataset) as number) });
  return { ranker, confidence };
}

/** Executed precision when the most confident half of the fitting intents run (no-fit copies included as they come). */
function precisionAtHalf(scored: ReadonlyArray<{ confidence: number; right: boolean; fitting: boolean }>): number | null {
  const fitting = scored.filter((s) => s.fitting).length;
  let seen = 0;
  let executed = 0;
  let right = 0;
  for (const s of [...scored].filter((x) => x.confidence >= 0).sort((a, b) => b.confidence - a.confidence)) {
    executed++;
    if (s.right) right++;
    if (s.fitting) seen++;
    if (seen >= fitting / 2) return round(right / executed);
  }
  return null;
}

function leaveOneOut(cases: readonly Case[]) {
  const datasets = [...new Set(cases.map((c) => c.dataset))];
  return datasets.flatMap((d) => {
    const model = fit(cases.filter((c) => c.dataset !== d && c.split === 'dev'));
    const splits = [...new Set(cases.filter((c) => c.dataset === d).map((c) => c.split))];
    return splits.map((split) => {
      const mine = cases.filter((c) => c.dataset === d && c.split === split);
      const fitting = mine.filter((c) => !c.goldRemoved);
      const lists = mine.map((c) => ranked(model.ranker, c.rows));
      const share = (n: number) => (fitting.length ? round(n / fitting.length) : null);
      return {
        split: `${d}/${split}`,
        intents: fitting.length,
        top1: share(fitting.filter((c) => c.rows[0]?.toolRight).length),
        rankedTop1: share(lists.filter((l, i) => !mine[i]?.goldRemoved && l[0]?.row.toolRight).length),
        call: share(fitting.filter((c) => c.rows[0]?.callRight).length),
        rankedCall: share(lists.filter((l, i) => !mine[i]?.goldRemoved && l[0]?.row.callRight).length),
        ownPrecisionAtHalf: precisionAtHalf(mine.map((c) => ({ confidence: c.raw, right: c.rawRight, fitting: !c.goldRemoved }))),
        learnedPrecisionAtHalf: precisionAtHalf(mine.map((c, i) => ({ confidence: lists[i]?.length ? predict(model.confidence, confidenceFeatures(lists[i] ?? [])) : -1, right: lists[i]?.[0]?.row.callRight ?? false, fitting: !c.goldRemoved }))),
      };
    });
  });
}
