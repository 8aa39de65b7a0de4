import type { BenchCase } from '../../src/datasets/case-file.js';
import { importCatalog } from '../../src/datasets/catalog-file.js';
import type { Dataset } from '../../src/datasets/find-datasets.js';
import { readSplit } from '../../src/datasets/read-split.js';
import type { ResolverFallback } from '../../src/resolver/model-fallback.js';
import { DEFAULT_RESOLVER_SETTINGS } from '../../src/resolver/resolver.js';
import { createProgress } from '../progress.js';
import { CANDIDATES, openCatalogResolver, warmUp } from '../resolve/resolve-catalog.js';
import { uniform } from '../scale/seeded.js';
import { round } from '../stats.js';

/**
 * Part 2 of the side-request bench: the recall of the candidate set the side request shows,
 * over every dataset of a datasets folder. Each intent goes through the real resolver with the
 * shipped settings (the shipped target_precision and its gate, if any) and a fallback that only
 * records the tools it is shown and declines; the resolver asks it exactly where a chat would ask
 * its model — a call below the gate or a required value missing. The share of those intents whose
 * gold tool is among the first K shown is the ceiling any fallback model can reach there.
 */

export const RECALL_KS = [1, 3, 5, 8] as const;

/** One intent's outcome: `shown` is what the side request would show (best first), or null where it is not asked. */
export interface CandidateOutcome {
  id: string;
  gold: string;
  /** `ran`: the rules ran a call without asking; otherwise the resolver's stop (`gate`, `arguments`, `threshold`, `match`…). */
  stop: string;
  shown: string[] | null;
}

export interface CatalogRecall {
  dataset: string;
  /** Distinct one-call intents in the dataset's splits, and how many were run (the seeded sample). */
  pool: number;
  sampled: number;
  /** Of the sample: asked (the side request would be made), ran by the rules, and not asked otherwise (no tool fits, …). */
  asked: number;
  ran: number;
  not_asked: Record<string, number>;
  /** Per K: the share of asked intents whose gold tool is among the first K shown; null when none was asked. */
  recall: Record<string, number | null>;
}

/**
 * Distinct intents with exactly one gold call (a side request proposes one call; a sequence is
 * never one call), the same intent and gold kept once (ToolAlpaca's dev and test_simulated hold
 * the same instructions).
 */
export function oneCallCases(cases: readonly BenchCase[]): BenchCase[] {
  const seen = new Set<string>();
  return cases.filter((c) => {
    if (c.calls.length !== 1) return false;
    const key = JSON.stringify([c.intent, c.calls]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** `n` of the cases drawn without replacement, the same for the same seed (a seeded Fisher–Yates); all when there are no more. */
export function seededSample<T>(items: readonly T[], n: number, seed: number): T[] {
  if (items.length <= n) return [...items];
  const next = uniform(seed);
  const out = [...items];
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(next() * (out.length - i));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out.slice(0, n);
}

/** Recall of the shown set at each K over the intents that were asked, with the counts around it. */
export function catalogRecall(dataset: string, pool: number, outcomes: readonly CandidateOutcome[], ks: readonly number[] = RECALL_KS): CatalogRecall {
  const asked = outcomes.filter((o) => o.shown !== null);
  const notAsked: Record<string, number> = {};
  for (const o of outcomes) if (o.shown === null && o.stop !== 'ran') notAsked[o.stop] = (notAsked[o.stop] ?? 0) + 1;
  const recall: Record<string, number | null> = {};
  for (const k of ks) recall[`at_${k}`] = asked.length === 0 ? null : round(asked.filter((o) => (o.shown as string[]).slice(0, k).includes(o.gold)).length / asked.length);
  return { dataset, pool, sampled: outcomes.length, asked: asked.length, ran: outcomes.filter((o) => o.stop === 'ran').length, not_asked: notAsked, recall };
}

/** A fallback that asks no model: it writes down what it was shown and declines, so the rules' answer stands. */
function recordingFallback(shownTo: (ids: string[]) => void, candidates: number): ResolverFallback {
  return {
    model: 'recorder',
    upstream: 'none',
    candidates,
    async ask(a) {
      shownTo(a.tools.map((t) => t.id));
      return { kind: 'declined', why: 'the bench records the candidates and asks no model', cost: { ms: 0 } };
    },
  };
}

/** One dataset: its one-call intents (a seeded sample of `sample`, or all), resolved with the shipped settings. */
export async function datasetRecall(dataset: Dataset, options: { sample: number | undefined; seed: number; embedder?: string | undefined }): Promise<CatalogRecall> {
  const cases: BenchCase[] = [];
  for (const split of dataset.splits) cases.push(...(await readSplit(split)));
  const pool = oneCallCases(cases);
  const picked = options.sample === undefined ? pool : seededSample(pool, options.sample, options.seed);
  if (picked.length === 0) return catalogRecall(dataset.name, 0, []);
  const catalog = await importCatalog(dataset.catalog);
  const maxK = Math.max(...RECALL_KS);
  const opened = await openCatalogResolver({ catalog, settings: { targetPrecision: DEFAULT_RESOLVER_SETTINGS.targetPrecision }, label: dataset.name, embedder: options.embedder });
  try {
    await warmUp(opened.resolver, picked);
    const name = (id: string) => catalog.names.get(id) ?? id;
    const tick = createProgress('').counter(`${dataset.name}: candidates shown`);
    const outcomes: CandidateOutcome[] = [];
    for (const [i, c] of picked.entries()) {
      let shown: string[] | null = null;
      const fallback = recordingFallback((ids) => {
        shown = ids.map(name);
      }, maxK);
      const r = await opened.resolver.resolve(c.intent, { limit: CANDIDATES, fallback });
      outcomes.push({ id: c.id, gold: (c.calls[0] as { name: string }).name, stop: r.status === 'resolved' ? 'ran' : (r.stop ?? 'unresolved'), shown });
      tick(i + 1, picked.length);
    }
    return catalogRecall(dataset.name, pool.length, outcomes);
  } finally {
    await opened.close();
  }
}
