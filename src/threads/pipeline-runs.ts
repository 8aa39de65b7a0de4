import { KiwiError } from '../base/errors.js';
import type { PipelineRef, ThreadStore, ThreadSummary } from './thread-store.js';

/**
 * A pipeline run's state, read back from what is already durable: each stage is a thread, and
 * its transcript's header names the run, the stage and the pipeline's inputs (written, synced,
 * before the stage runs). So a run needs no store of its own, with files or with DATABASE_URL
 * alike, and its state can never disagree with its threads': a stage ended as its thread did,
 * one cut short is a thread without an end that no live process holds.
 */

export interface PipelineRunState {
  run: string;
  pipeline: string;
  inputs: Record<string, unknown>;
  /** Each stage that started, by name: its thread as the store lists it. */
  stages: Map<string, ThreadSummary>;
  started_at: string;
}

/** How far back a run's threads are looked for, newest first: older runs are not found. */
export const RUN_SCAN = 2000;

const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/u;

/** INVALID_INPUT unless `id` is a run's id (a UUID): it is matched, never used as a path. */
export function checkRunId(id: string): void {
  if (!RUN_ID.test(id)) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(id)} is not a pipeline run id; \`kiwi pipelines runs\` shows them`);
}

/** Every run among the threads looked at, newest first. */
export async function listPipelineRuns(store: ThreadStore): Promise<PipelineRunState[]> {
  const runs = new Map<string, PipelineRunState>();
  for (const summary of await store.list(RUN_SCAN)) {
    const ref: PipelineRef | undefined = summary.header.pipeline;
    if (ref === undefined) continue;
    const state = runs.get(ref.run) ?? { run: ref.run, pipeline: ref.name, inputs: ref.inputs, stages: new Map(), started_at: summary.header.started_at };
    // Newest first: a stage keeps the thread written last (a resume writes on in it, or runs a stage that failed again in a new one).
    if (!state.stages.has(ref.stage)) state.stages.set(ref.stage, summary);
    if (summary.header.started_at < state.started_at) state.started_at = summary.header.started_at;
    runs.set(ref.run, state);
  }
  return [...runs.values()];
}

/** One run's state; NOT_FOUND when none of its stages has a thread among those looked at. */
export async function readPipelineRun(store: ThreadStore, run: string): Promise<PipelineRunState> {
  checkRunId(run);
  const found = (await listPipelineRuns(store)).find((r) => r.run === run);
  if (found === undefined) throw new KiwiError('NOT_FOUND', `no pipeline run ${run} among the ${RUN_SCAN} most recent threads in ${store.where}; \`kiwi pipelines runs\` shows them`);
  return found;
}
