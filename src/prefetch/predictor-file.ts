import path from 'node:path';
import { createTransitionModel, loadTransitionModel, saveTransitionModel, type LearnedTransitionModel } from './transition-model.js';

/**
 * The transition model a long-running process (the gateway) loads, keeps learning online, and
 * saves when it stops, without clobbering a newer file. If the file changed on disk meanwhile
 * (`kiwi predictor train` ran), that file wins and the process's model is dropped: nothing is
 * lost, because every call it learned from is also in the audit log, which the next train reads.
 * Merging instead would count those calls twice (train already read the ones logged before it).
 */

/**
 * Where `kiwi predictor train` writes the transition model in a project, and where the gateway
 * keeps learning it: generated state, beside the kernel's, so `.ai/.gitignore` keeps it out of git.
 */
export function predictorFile(root: string): string {
  return path.join(root, '.ai', 'state', 'predictor.json');
}

export type PredictorSaveOutcome = 'saved' | 'nothing-learned' | 'file-changed';

export interface PredictorFile {
  model: LearnedTransitionModel;
  /** Writes the model unless it learned nothing or the file is no longer the one it was read from. */
  save(): Promise<PredictorSaveOutcome>;
}

/** A file that is missing starts an empty model; a broken one throws INVALID_INPUT saying to retrain. */
export async function openPredictorFile(file: string): Promise<PredictorFile> {
  const loaded = await loadTransitionModel(file);
  // What was read, as written: compared again before saving (content, not mtime: a rename within
  // the same clock tick keeps the mtime).
  const readAs = loaded === undefined ? undefined : JSON.stringify(loaded.toJSON());
  const model = loaded ?? createTransitionModel();
  const learnedAtStart = model.stats().observations;

  async function save(): Promise<PredictorSaveOutcome> {
    if (model.stats().observations === learnedAtStart) return 'nothing-learned';
    let onDisk: string | undefined | null;
    try {
      const now = await loadTransitionModel(file);
      onDisk = now === undefined ? undefined : JSON.stringify(now.toJSON());
    } catch {
      // Unreadable now: someone else is writing it; leave it to them.
      onDisk = null;
    }
    if (onDisk !== readAs) return 'file-changed';
    await saveTransitionModel(file, model);
    return 'saved';
  }

  return { model, save };
}
