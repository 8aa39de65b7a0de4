/**
 * The resolver's learned confidence (models/resolver/model.json, built by `kiwi model train`): a
 * logistic calibration that turns the whole-call confidence (the tool's confidence times its least
 * certain argument's) into the probability that the call is entirely right, and, for each target
 * precision it offers, the lowest calibrated confidence that held it on every dataset left out of
 * fitting (train/fold-gates.ts), with the figures of each fold. Loaded once
 * at start; a damaged file is an error that says how to rebuild it, never a silent fallback.
 *
 * Why so small: a ranker and a confidence over twenty catalog-independent features (similarities,
 * ranks and gaps, per-field word overlap weighted by the catalog's own word rarity, argument fit,
 * near-duplicate neighbours) were fitted the same way and lost to this, leave-one-dataset-out:
 * they learned habits of the catalogs they saw (`npm run bench -- learned-ranker` measures it).
 */
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { predict } from './logistic.js';

export const DEFAULT_MODEL_FILE = fileURLToPath(new URL('../../models/resolver/model.json', import.meta.url));
export const MODEL_FORMAT_VERSION = 1;
const MAX_MODEL_BYTES = 256 * 1024;
/** Raw confidences are clamped this far from 0 and 1 before the logit: 0 and 1 have none. */
const EDGE = 1e-4;

const calibrationSchema = z.object({ mean: z.array(z.number().finite()).length(1), std: z.array(z.number().finite().positive()).length(1), weights: z.array(z.number().finite()).length(1), bias: z.number().finite() });
const count = z.number().int().min(0);

/** How each target fared with each dataset left out of the whole fit (train/fold-gates.ts). */
const leaveOneOutSchema = z.object({
  /** A fold that ran fewer calls than this cannot show a target holds. */
  min_executed: z.number().int().min(1),
  /** Per target, the gate fitted on every dataset, offered or not (null: none held). */
  fitted: z.array(z.object({ precision: z.number().gt(0).max(1), threshold: z.number().min(0).max(1).nullable() })),
  folds: z
    .array(
      z.object({
        dataset: z.string().min(1),
        /** Fitted without this dataset: what scored it. */
        calibration: calibrationSchema,
        gates: z.array(z.object({ precision: z.number().gt(0).max(1), threshold: z.number().min(0).max(1).nullable(), executed: count, right: count, fitting: count, covered: count })),
      }),
    )
    .min(1),
});

const modelSchema = z.object({
  version: z.literal(MODEL_FORMAT_VERSION),
  /** The embedder whose similarities it was fitted on: the raw confidence means something else under another. */
  embedder: z.string().min(1),
  calibration: calibrationSchema,
  /** Target executed precision → the calibrated confidence a call needs for it; null: the target is not offered. */
  gates: z.array(z.object({ precision: z.number().gt(0).max(1), threshold: z.number().min(0).max(1).nullable() })).min(1),
  /** The evidence for the gates, fold by fold; absent in a model built before they were checked per fold. */
  leave_one_out: leaveOneOutSchema.optional(),
  /** What it was trained on and how it scored; for people, not read at run time. */
  card: z.record(z.string(), z.unknown()),
});

export type ResolverModel = z.infer<typeof modelSchema>;

/** The calibration's input: the raw whole-call confidence on the logit scale. */
export function rawLogit(raw: number): number {
  const p = Math.min(1 - EDGE, Math.max(EDGE, raw));
  return Math.log(p / (1 - p));
}

/** The probability that a call of this raw whole-call confidence is entirely right. */
export function calibrate(model: Pick<ResolverModel, 'calibration'>, raw: number): number {
  return predict(model.calibration, [rawLogit(raw)]);
}

/**
 * The calibrated confidence a call needs so that at least `precision` of executed calls are right:
 * the gate of the lowest offered target at or above it (one that held at 0.85 on every fold held
 * at 0.8 too). `null` when no target that high is offered: then no call from plain words runs on
 * the rules' confidence alone.
 */
export function gateFor(model: Pick<ResolverModel, 'gates'>, precision: number): number | null {
  if (precision <= 0) return 0;
  return offeredGates(model).find((g) => g.precision >= precision)?.threshold ?? null;
}

/** The targets the model offers, lowest first, with their gates. */
export function offeredGates(model: Pick<ResolverModel, 'gates'>): Array<{ precision: number; threshold: number }> {
  return model.gates.flatMap((g) => (g.threshold === null ? [] : [{ precision: g.precision, threshold: g.threshold }])).sort((a, b) => a.precision - b.precision);
}

export async function loadResolverModel(file: string = DEFAULT_MODEL_FILE): Promise<ResolverModel> {
  const hint = `rebuild it with \`kiwi model train\` (or restore the shipped one: git checkout -- models/resolver)`;
  let text: string;
  try {
    const tooLarge = (size: number) => new KiwiError('INVALID_INPUT', `resolver model ${file} is ${size} bytes, over the ${MAX_MODEL_BYTES} a calibration and its card can be; ${hint}`);
    text = (await readCappedFile(file, MAX_MODEL_BYTES, tooLarge)).toString('utf8');
  } catch (error) {
    if (error instanceof KiwiError) throw error;
    throw new KiwiError('INVALID_INPUT', `cannot read the resolver model ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}); ${hint}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `resolver model ${file} is not JSON (${error instanceof Error ? error.message : error}); ${hint}`);
  }
  const parsed = modelSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KiwiError('INVALID_INPUT', `resolver model ${file}: ${issue?.path.join('.') || 'file'}: ${issue?.message}; ${hint}`);
  }
  return parsed.data;
}
