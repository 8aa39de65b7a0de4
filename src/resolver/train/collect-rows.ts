/**
 * What the confidence is fitted on: each one-call case of a dataset split run through the real
 * resolver (real index, rule-based arguments, no gate), as the raw whole-call confidence and
 * whether the call was entirely right.
 *
 * Catalogs come with few intents that no tool fits, so every fourth case is also taken again
 * with its gold tool out of the pool: what the resolver sees when the tool asked for is missing,
 * often with a near neighbour in its place. Any call made then is wrong.
 */
import type { BenchCase } from '../../datasets/case-file.js';
import type { ImportedCatalog } from '../../datasets/catalog-file.js';
import { retrievalConfidence, type ResolverSettings } from '../resolver.js';
import { callMatches } from '../score-call.js';
import type { Retrieval, StagedResolver } from '../types.js';

export interface TrainingRow {
  dataset: string;
  split: string;
  id: string;
  /** The gold tool was taken out of the pool: no call is right. */
  goldRemoved: boolean;
  /** A call was made (resolved); an unresolved intent is never executed, whatever the gate. */
  resolved: boolean;
  /** The resolver's raw whole-call confidence. */
  raw: number;
  callRight: boolean;
}

export const GOLD_REMOVED_EVERY = 4;

/**
 * The cases rows come from: those with one gold call. A single call is never the whole answer to
 * a multi-call case (the suite counts it wrong), and the gates are checked on one-call and no-fit
 * cases, so a sequence's calls would teach the calibration a target nothing measures it on.
 */
export function oneCallCases<T extends Pick<BenchCase, 'calls'>>(cases: readonly T[]): T[] {
  return cases.filter((c) => c.calls.length === 1);
}

/**
 * What a case is completed against: its retrieval, and for every GOLD_REMOVED_EVERY-th case
 * (`index` in the list of cases) the same retrieval again without the gold tool, its confidence
 * recomputed from the pool that is left.
 */
export function trainingRetrievals(
  retrieval: Retrieval,
  index: number,
  isGold: (tool: string) => boolean,
  settings: Pick<ResolverSettings, 'marginWeight'>,
): Array<{ goldRemoved: boolean; retrieval: Retrieval }> {
  const out = [{ goldRemoved: false, retrieval }];
  if (index % GOLD_REMOVED_EVERY === 0) {
    const candidates = retrieval.candidates.filter((c) => !isGold(c.tool));
    out.push({ goldRemoved: true, retrieval: { ...retrieval, candidates, confidence: retrievalConfidence(candidates, settings) } });
  }
  return out;
}

export async function collectRows(
  resolver: StagedResolver,
  catalog: ImportedCatalog,
  where: { dataset: string; split: string; settings: Pick<ResolverSettings, 'marginWeight'> },
  cases: readonly BenchCase[],
  onProgress?: (done: number, total: number) => void,
): Promise<TrainingRow[]> {
  const nameOf = (id: string): string => catalog.names.get(id) ?? id;
  const schemas = new Map(catalog.tools.map((t) => [nameOf(t.id), t.parameters.map((p) => p.name)]));
  const out: TrainingRow[] = [];
  const usable = oneCallCases(cases);
  for (const [i, c] of usable.entries()) {
    const gold = c.calls[0] as BenchCase['calls'][number];
    const retrieval = await resolver.retrieve(c.intent);
    // A tool the intent names is not a guess: it never meets the gate, so it teaches the gate nothing.
    if (!retrieval.named) {
      for (const seen of trainingRetrievals(retrieval, i, (tool) => nameOf(tool) === gold.name, where.settings)) {
        const r = await resolver.complete(c.intent, seen.retrieval, { rulesOnly: true });
        const callRight = !seen.goldRemoved && r.status === 'resolved' && callMatches(gold, { tool: nameOf(r.call.tool), arguments: r.call.arguments }, { schema: schemas.get(gold.name) ?? [] });
        out.push({ dataset: where.dataset, split: where.split, id: c.id, goldRemoved: seen.goldRemoved, resolved: r.status === 'resolved', raw: r.confidence, callRight });
      }
    }
    onProgress?.(i + 1, usable.length);
  }
  return out;
}
