import { KiwiError } from '../base/errors.js';
import type { Retrieval, StagedResolver } from '../resolver/types.js';
import type { Prediction, Snapshot, TransitionModel } from './types.js';

export interface PredictorWeights {
  /** Weight of the text's evidence (the retrieval of the snapshot's query). */
  text: number;
  /** Weight of the transition prior (which tool tends to follow the previous one). */
  transition: number;
}

export const DEFAULT_PREDICTOR_WEIGHTS: PredictorWeights = { text: 0.7, transition: 0.3 };

export interface PredictorOptions {
  resolver: Pick<StagedResolver, 'retrieve'>;
  transitions?: TransitionModel;
  weights?: Partial<PredictorWeights>;
  /** Predictions below this confidence are left out (default 0.3). */
  threshold?: number;
  /** At most this many predictions per snapshot (default 3). */
  maxPredictions?: number;
  /** Text candidates and transition tools considered (default 5 each). */
  pool?: number;
  now?: () => number;
}

export interface PredictOptions {
  previousTool: string | null;
  signal?: AbortSignal;
}

export interface PredictResult {
  /** Best first. */
  predictions: Prediction[];
  /** The snapshot query's retrieval, for the cache. */
  retrieval: Retrieval;
  /** What this prediction cost (embed, search and combining), in ms. */
  ms: number;
}

export interface Predictor {
  predict(snapshot: Snapshot, options: PredictOptions): Promise<PredictResult>;
}

/**
 * Guesses the next tool from the streamed text and from the tool called before.
 *
 * Text: each retrieved candidate gets the confidence the resolver would give it if it ranked
 * first (its score plus its lead over the best other candidate, margin weight 1), so the top
 * candidate's is the resolver's own confidence and the threshold means the same thing here.
 * Transitions: the model's probability of this tool after the previous one.
 * The two are mixed linearly (w_text · text + w_transition · p, weights summing to 1), not
 * multiplied: a transition model learned from a sparse audit log says 0 for every pair it has
 * not seen, and a product would let that veto a tool the text names plainly; a mixture lets
 * either source carry a prediction alone, in proportion to its weight. When the model has no
 * opinion (empty `next`), the text decides alone rather than being scaled down.
 */
export function createPredictor(options: PredictorOptions): Predictor {
  const weights = checkWeights({ ...DEFAULT_PREDICTOR_WEIGHTS, ...options.weights });
  const threshold = checkRange('threshold', options.threshold ?? 0.3, 0, 1);
  const maxPredictions = checkRange('maxPredictions', options.maxPredictions ?? 3, 1, 50, true);
  const pool = checkRange('pool', options.pool ?? 5, 1, 100, true);
  const now = options.now ?? (() => performance.now());

  return {
    async predict(snapshot, { previousTool, signal }) {
      const t0 = now();
      const retrieval = await options.resolver.retrieve(snapshot.query, signal ? { signal } : {});
      const text = textConfidences(retrieval, pool);
      const prior = new Map<string, number>();
      for (const { tool, p } of options.transitions?.next(previousTool, pool) ?? []) {
        if (Number.isFinite(p) && p > 0) prior.set(tool, Math.min(1, p));
      }
      const total = weights.text + weights.transition;
      const predictions: Prediction[] = [];
      for (const tool of new Set([...text.keys(), ...prior.keys()])) {
        const t = text.get(tool) ?? 0;
        const p = prior.get(tool) ?? 0;
        const confidence = prior.size === 0 ? t : (weights.text * t + weights.transition * p) / total;
        if (confidence < threshold) continue;
        const source = t > 0 && p > 0 ? 'both' : t > 0 ? 'text' : 'transition';
        predictions.push({ query: retrieval.intent, tool, confidence, source });
      }
      predictions.sort((a, b) => b.confidence - a.confidence || a.tool.localeCompare(b.tool));
      return { predictions: predictions.slice(0, maxPredictions), retrieval, ms: now() - t0 };
    },
  };
}

function textConfidences(retrieval: Retrieval, pool: number): Map<string, number> {
  const out = new Map<string, number>();
  const first = retrieval.candidates[0];
  if (!first) return out;
  out.set(first.tool, retrieval.confidence);
  for (const c of retrieval.candidates.slice(1, pool)) {
    // The runner-up of any candidate but the first is the first.
    const confidence = Math.max(0, Math.min(1, c.score + (c.score - first.score)));
    if (confidence > 0) out.set(c.tool, confidence);
  }
  return out;
}

function checkWeights(w: PredictorWeights): PredictorWeights {
  for (const [name, value] of Object.entries(w)) {
    if (!Number.isFinite(value) || value < 0) {
      throw new KiwiError('INVALID_INPUT', `predictor weight ${name} must be a finite number ≥ 0, got ${String(value)}; the defaults are ${JSON.stringify(DEFAULT_PREDICTOR_WEIGHTS)}`);
    }
  }
  if (w.text + w.transition <= 0) {
    throw new KiwiError('INVALID_INPUT', 'predictor weights text and transition are both 0; give at least one of them a positive weight');
  }
  return w;
}

function checkRange(name: string, value: number, min: number, max: number, integer = false): number {
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new KiwiError('INVALID_INPUT', `predictor ${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${String(value)}; leave it out for the default`);
  }
  return value;
}
