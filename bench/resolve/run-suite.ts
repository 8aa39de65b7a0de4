/**
 * `npm run bench -- resolve-suite`: every dataset of a datasets folder through the real resolver,
 * one index per catalog shared by its case files, in one table.
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ResolverSettings } from '../../src/resolver/resolver.js';
import { peakRssMb, round } from '../stats.js';
import { argumentTypes, catalogParameters, type Parameters } from './argument-types.js';
import { readCases, spreadSample, type BenchCase } from '../../src/datasets/case-file.js';
import { importCatalog, type ImportedCatalog } from '../../src/datasets/catalog-file.js';
import { findDatasets, type Dataset, type DatasetSplit } from '../../src/datasets/find-datasets.js';
import { readSplit } from '../../src/datasets/read-split.js';
import { groupResults, type CaseResult, type GroupMetrics, type Schemas } from './metrics.js';
import { benchSettings, catalogSchemas, fallbackSummary, openCatalogResolver, parseCount, parseFallback, parseSettings, resolveCases, warmUp, type BenchFallback } from './resolve-catalog.js';
import { loadResolverModel } from '../../src/resolver/learned-model.js';
import { givenToolAccuracy, givenToolOutcomes } from './given-tool.js';
import { printShippedGates, shippedGates, type DatasetRun } from './shipped-gates.js';
import { printSuiteFolds, suiteFolds } from './fold-gates.js';
import { riskCoverage, selectiveAt, THRESHOLDS } from './risk-coverage.js';
import { ARGUMENT_LEGEND, printArgumentTable, printSuiteTable, SUITE_LEGEND, type SuiteRow } from './suite-table.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const USAGE = 'npm run bench -- resolve-suite [--datasets DIR] [--out FILE] [--limit N] [--no-fit FILE] [--embedder use-lite|static] [--set key=value…] [--fallback-url URL --fallback-model MODEL]';

export async function runSuiteBench(argv: string[]): Promise<void> {
  const { values } = parseOptions(argv);
  const settings = parseSettings(values.set ?? []);
  const limit = parseCount('limit', values.limit);
  const fallback = parseFallback(values['fallback-url'], values['fallback-model']);
  const datasetsDir = path.resolve(values.datasets ?? path.resolve(REPO_ROOT, '..', 'shared', 'datasets'));
  const noFitFile = path.resolve(values['no-fit'] ?? path.join(REPO_ROOT, 'bench', 'cases', 'no-fit.jsonl'));
  const datasets = await findDatasets(datasetsDir);
  const noFit = await readCases([noFitFile]);
  if (noFit.some((c) => c.calls.length > 0)) throw new Error(`${noFitFile}: every case must have "calls": [] (an intent no tool fits)`);
  console.error(`resolve-suite: ${datasets.map((d) => d.name).join(', ')} from ${datasetsDir}; ${noFit.length} no-fit intents added to every split${limit ? `; ${limit} cases spread over each split` : ''}`);

  const started = performance.now();
  const reports: Record<string, SplitReport> = {};
  const rows: SuiteRow[] = [];
  const runs: DatasetRun[] = [];
  let embedder = '';
  for (const dataset of datasets) {
    const run = await runDataset(dataset, { settings, limit, noFit, noFitFile, embedder: values.embedder, fallback });
    embedder = run.embedder;
    runs.push(run.recorded);
    for (const [name, report] of Object.entries(run.reports)) {
      reports[name] = report;
      rows.push({ name, all: report.groups['all'] as GroupMetrics, executedPrecisionSingleCall: report.executed_precision_single_call, callGivenTool: report.call_accuracy_given_tool.accuracy, argumentTypes: report.argument_types });
    }
  }
  const runS = (performance.now() - started) / 1000;
  const model = await loadResolverModel();
  const shipped = shippedGates(runs, model);
  const folds = suiteFolds(runs, model);

  printSuiteTable(rows);
  for (const line of SUITE_LEGEND) console.log(line);
  console.log(`\nargument ${ARGUMENT_LEGEND}:`);
  printArgumentTable(rows);
  if (fallback) {
    console.log(`\nfallback model ${fallback.model} at ${fallback.url}:`);
    for (const [name, report] of Object.entries(reports)) {
      const f = report.fallback;
      if (f) console.log(`  ${name.padEnd(28)} asked ${f.asked} (${Object.entries(f.outcomes).map(([k, v]) => `${k} ${v}`).join(', ')}), ${f.seconds} s, ${f.input_tokens} tokens in, ${f.output_tokens} out`);
    }
  }
  printShippedGates(shipped, model.gates.filter((g) => g.threshold === null).map((g) => g.precision));
  printSuiteFolds(folds);
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${round(os.totalmem() / 2 ** 30, 1)} GiB, Node ${process.version}`;
  console.log(`\nrun time ${(runS / 60).toFixed(1)} min (${round(runS, 0)} s), peak RSS ${peakRssMb()} MB, embedder ${embedder}, ${machine}`);
  if (values.out) {
    const result = {
      bench: 'resolve-suite',
      datasets_dir: datasetsDir,
      no_fit: noFitFile,
      limit: limit ?? null,
      settings: benchSettings(settings),
      // The fallback model asked where the rules stopped short (resolver.yaml `fallback:`), or null: rules only.
      fallback: fallback ?? null,
      embedder,
      machine,
      run_s: round(runS, 1),
      peak_rss_mb: peakRssMb(),
      risk_coverage_thresholds: THRESHOLDS,
      shipped_gates: shipped,
      // Per dataset left out and per target: the gate fitted without it, and what ran on it.
      fold_gates: folds,
      datasets: reports,
    };
    await writeFile(values.out, `${JSON.stringify(result, null, 2)}\n`);
    console.error(`wrote ${values.out}`);
  }
}

type SplitReport = ReturnType<typeof splitReport>;

interface RunOptions {
  settings: Partial<ResolverSettings>;
  embedder: string | undefined;
  limit: number | undefined;
  noFit: BenchCase[];
  noFitFile: string;
  fallback: BenchFallback | undefined;
}

/** One catalog: imported and indexed once; its no-fit resolutions made once and added to every split. */
async function runDataset(dataset: Dataset, options: RunOptions): Promise<{ embedder: string; reports: Record<string, SplitReport>; recorded: DatasetRun }> {
  const catalog = await importCatalog(dataset.catalog);
  console.error(`${dataset.name}: ${catalog.tools.length} tools, ${catalog.skipped.length} catalog lines skipped${catalog.skipped.length ? `, e.g. ${catalog.skipped[0]}` : ''}`);
  const splits: Array<DatasetSplit & { cases: BenchCase[] }> = [];
  const seen = new Map<string, string>();
  for (const split of dataset.splits) {
    const cases = await readSplit(split);
    // A split with the very same intents and gold calls as another (ToolAlpaca's test_simulated is its dev) would only repeat a row.
    const key = JSON.stringify(cases.map((c) => [c.intent, c.calls]));
    const same = seen.get(key);
    if (same !== undefined) {
      console.error(`${dataset.name}/${split.name}: the same intents and gold calls as ${same}; skipped`);
      continue;
    }
    seen.set(key, split.name);
    splits.push({ ...split, cases: options.limit === undefined ? cases : spreadSample(cases, options.limit) });
  }

  const opened = await openCatalogResolver({ catalog, settings: options.settings, label: dataset.name, embedder: options.embedder, fallback: options.fallback });
  try {
    await warmUp(opened.resolver, splits[0]?.cases ?? []);
    const noFit = await resolveCases(opened.resolver, catalog, options.noFit, { label: `${dataset.name}/no-fit` });
    const schemas = catalogSchemas(catalog);
    const parameters = catalogParameters(catalog);
    const tools = new Map(catalog.tools.map((t) => [t.id, t]));
    const reports: Record<string, SplitReport> = {};
    const recorded: DatasetRun = { name: dataset.name, schemas, splits: {} };
    for (const split of splits) {
      const name = `${dataset.name}/${split.name}`;
      const results = [...(await resolveCases(opened.resolver, catalog, split.cases, { label: name })), ...noFit];
      const givenTool = givenToolAccuracy(givenToolOutcomes(split.cases, tools).outcomes);
      reports[name] = splitReport({ dataset, split, catalog, results, schemas, parameters, givenTool, indexBuildMs: opened.indexBuildMs, embedder: opened.embedderId, options });
      recorded.splits[split.name] = results;
    }
    return { embedder: opened.embedderId, reports, recorded };
  } finally {
    await opened.close();
  }
}

function splitReport(r: {
  dataset: Dataset;
  split: DatasetSplit & { cases: BenchCase[] };
  catalog: ImportedCatalog;
  results: CaseResult[];
  schemas: Schemas;
  parameters: Parameters;
  givenTool: { n: number; accuracy: number | null };
  indexBuildMs: number;
  embedder: string;
  options: RunOptions;
}) {
  const groups = groupResults(r.results, r.schemas);
  const all = groups['all'];
  const oneCall = r.results.filter((x) => x.case.calls.length <= 1);
  return {
    bench: 'resolve' as const,
    catalog: r.dataset.catalog,
    cases: [...r.split.files, r.options.noFitFile].join(','),
    // A split cut from its files by domain or source (src/datasets/dev-cuts.ts): which part.
    cut: r.split.cut ?? null,
    tools: r.catalog.tools.length,
    catalog_lines_skipped: r.catalog.skipped.length,
    index_build_ms: round(r.indexBuildMs, 0),
    embedder: r.embedder,
    coverage: all?.coverage ?? null,
    executed_precision: all?.executed_precision ?? null,
    executed_precision_single_call: selectiveAt(oneCall, r.schemas, 0).executed_precision,
    // The rule filler handed the gold tool (given-tool.ts): what filling alone gets right.
    call_accuracy_given_tool: r.givenTool,
    recall_at_20: all?.recall_at_20 ?? null,
    risk_coverage: riskCoverage(r.results, r.schemas),
    argument_types: argumentTypes(r.results, r.parameters),
    ...(r.options.fallback ? { fallback: fallbackSummary(r.results) } : {}),
    groups,
  };
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: { datasets: { type: 'string' }, out: { type: 'string' }, limit: { type: 'string' }, 'no-fit': { type: 'string' }, embedder: { type: 'string' }, set: { type: 'string', multiple: true }, 'fallback-url': { type: 'string' }, 'fallback-model': { type: 'string' } },
      strict: true,
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : error}; usage: ${USAGE}`);
  }
}
