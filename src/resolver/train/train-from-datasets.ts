/**
 * `kiwi model train`: every dataset of a folder laid out as shared/datasets is (FORMAT.md), its
 * `dev` split only (test splits stay unseen; for datasets published without one, the dev domains
 * cut in src/datasets/dev-cuts.ts), run through the real resolver over a real index, then the
 * calibration fitted, its gates set and each checked on every dataset left out (fold-gates.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spreadSample, type BenchCase } from '../../datasets/case-file.js';
import { importCatalog } from '../../datasets/catalog-file.js';
import { findDatasets, type SplitCut } from '../../datasets/find-datasets.js';
import { readSplit } from '../../datasets/read-split.js';
import type { EmbedderConfig } from '../../embed/create-embedder.js';
import { openResolverRuntime } from '../resolver-runtime.js';
import type { ResolverModel } from '../learned-model.js';
import { DEFAULT_RESOLVER_SETTINGS } from '../resolver.js';
import { collectRows, oneCallCases, type TrainingRow } from './collect-rows.js';
import { trainModel } from './train-model.js';

export const TRAINING_SPLIT = 'dev';

export interface TrainOptions {
  datasetsDir: string;
  embedder?: EmbedderConfig;
  /** Cases per dataset, spread over the split (quick runs and tests); all by default. */
  limit?: number;
  log: (line: string) => void;
  onProgress?: (label: string, done: number, total: number) => void;
}

export interface TrainReport {
  model: ResolverModel;
  rows: TrainingRow[];
  /** Datasets passed over, with why. */
  skipped: string[];
}

export async function trainFromDatasets(options: TrainOptions): Promise<TrainReport> {
  const datasets = await findDatasets(options.datasetsDir);
  const rows: TrainingRow[] = [];
  const skipped: string[] = [];
  const cuts = new Map<string, SplitCut>();
  let embedderId = '';
  for (const dataset of datasets) {
    const split = dataset.splits.find((s) => s.name === TRAINING_SPLIT);
    if (!split) {
      skipped.push(`${dataset.name}: no ${TRAINING_SPLIT}.jsonl (only the dev split is trained on)`);
      continue;
    }
    const catalog = await importCatalog(dataset.catalog);
    const all = await readSplit(split);
    const cases = options.limit === undefined ? all : spreadSample(all, options.limit);
    const indexDir = await mkdtemp(path.join(tmpdir(), 'kiwi-train-index-'));
    try {
      const runtime = await openResolverRuntime({ tools: catalog.tools, indexDir, model: null, settings: { targetPrecision: 0 }, ...(options.embedder ? { embedder: options.embedder } : {}) });
      try {
        embedderId = runtime.embedderId;
        await runtime.sync({ progress: { embedded: (_table, done, total) => options.onProgress?.(`${dataset.name}: embedding tools`, done, total) } });
        const got = await collectRows(runtime.resolver, catalog, { dataset: dataset.name, split: split.name, settings: DEFAULT_RESOLVER_SETTINGS }, cases, (done, total) =>
          options.onProgress?.(`${dataset.name}: resolving ${split.name}`, done, total),
        );
        options.log(`${dataset.name}: ${catalog.tools.length} tools, ${got.filter((r) => !r.goldRemoved).length} one-call intents of ${cases.length} and ${got.filter((r) => r.goldRemoved).length} with their tool taken out`);
        rows.push(...got);
        if (split.cut) cuts.set(dataset.name, split.cut);
        if (got.length === 0) skipped.push(`${dataset.name}: its ${split.name} split gives no row: ${noRowWhy(cases)}`);
      } finally {
        await runtime.close();
      }
    } finally {
      await rm(indexDir, { recursive: true, force: true });
    }
  }
  const names = [...new Set(rows.map((r) => r.dataset))];
  if (names.length < 3) throw new Error(`training needs rows from the ${TRAINING_SPLIT} split of at least three datasets: each is left out of a fit whose gates are set on the others, one left out at a time; found ${names.join(', ') || 'none'} in ${options.datasetsDir}`);
  const card = dataCard(rows, embedderId, cuts, skipped);
  return { model: trainModel(rows, embedderId, card), rows, skipped };
}

function noRowWhy(cases: readonly BenchCase[]): string {
  const oneCall = oneCallCases(cases).length;
  if (cases.length === 0) return 'it has no case';
  if (oneCall === 0) return `none of its ${cases.length} cases has a single gold call, and one call is never the whole answer to a sequence`;
  return `each of its ${oneCall} one-call intents names its tool, which skips the gate`;
}

/** What the model was fitted on (the fold figures are the model's own `leave_one_out`). */
function dataCard(rows: readonly TrainingRow[], embedder: string, cuts: ReadonlyMap<string, SplitCut>, passedOver: readonly string[]): Record<string, unknown> {
  const datasets = [...new Set(rows.map((r) => r.dataset))];
  return {
    trained_on: Object.fromEntries(
      datasets.map((d) => {
        const mine = rows.filter((r) => r.dataset === d);
        const cut = cuts.get(d);
        return [
          d,
          {
            split: TRAINING_SPLIT,
            ...(cut ? { cut: `${cut.field}: ${cut.values.join(', ')}` } : {}),
            intents: mine.filter((r) => !r.goldRemoved).length,
            tool_removed: mine.filter((r) => r.goldRemoved).length,
            calls_right: mine.filter((r) => r.callRight).length,
          },
        ];
      }),
    ),
    ...(passedOver.length > 0 ? { passed_over: passedOver } : {}),
    embedder,
    method:
      'logistic calibration of logit(raw whole-call confidence); datasets weigh the same; each gate the lowest confidence at which every dataset, scored by a calibration fitted without it, ran enough calls and held the target; a target offered only where the whole fit, made without each dataset in turn, held it on that dataset',
  };
}
