import { randomUUID } from 'node:crypto';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { directiveContext } from '../policy/directive-permissions.js';
import type { PermissionContext } from '../policy/permission-context.js';
import { checkInputs } from '../registry/directive-input-values.js';
import { renderTemplate } from '../registry/pipeline-template.js';
import type { Pipeline, PipelineStage } from '../registry/types.js';
import type { ThreadOutcome, ThreadResume, ThreadStart } from './run-thread.js';
import { readPipelineRun } from './pipeline-runs.js';
import type { PipelineRef, ThreadRecord, ThreadStatus, ThreadStore } from './thread-store.js';

/**
 * A pipeline run: its groups one after the other, the stages of a group at once, each stage its
 * directive as a thread (as the caller, with the caller's rights within the pipeline's
 * `permissions`, within the directive's: never wider than any). A stage that does not complete
 * fails the run: its running siblings are cancelled and later groups do not run. The run's state
 * is its stages' threads (pipeline-runs.ts), so `resume` reuses what completed, resumes the
 * threads that stopped, and runs the rest.
 */

export interface PipelineDeps {
  pipelines: ReadonlyMap<string, Pipeline>;
  policy: PermissionContext;
  store: ThreadStore;
  run(start: ThreadStart): Promise<ThreadOutcome>;
  resume(resume: ThreadResume): Promise<ThreadOutcome>;
  /** Whether this process drives the run now: between two groups none of its stages' threads runs, which is all the store shows. */
  driving?: (run: string) => boolean;
  /** Records the run as a kernel execution, each stage a step (the gateway's, when it records chats). */
  journal?: (run: { id: string; pipeline: string; inputs: Record<string, unknown>; client: string }) => PipelineJournal;
}

/** One run as the kernel keeps it (runs/pipeline-execution.ts). */
export interface PipelineJournal {
  /** Fires when the run's execution is cancelled through the kernel. */
  signal: AbortSignal;
  stageStarted(stage: PipelineStage, thread: string): void;
  /** Resolves once the run's execution is written: from then on it can be cancelled through the kernel. */
  written(): Promise<void>;
  stageEnded(outcome: StageOutcome): void;
  end(outcome: PipelineOutcome): void;
}

export interface PipelineCaller {
  client: string;
  /** The caller's own narrower rights, if any. */
  context?: PermissionContext;
  signal?: AbortSignal;
  onEvent?: (event: PipelineEvent) => void;
  /** Each line a stage's thread writes. */
  onRecord?: (stage: string, record: ThreadRecord) => void;
}

export type PipelineEvent = { type: 'run'; run: string; pipeline: string } | { type: 'stage-start'; stage: string; thread: string; resumed: boolean } | { type: 'stage-end'; outcome: StageOutcome; reused: boolean };

/**
 * `not_run`: a later group after a failure, or a stage whose thread could not start (`error` says
 * why). A thread that completed after its last intent failed (`failure`: `denied`, `tool_error`, …,
 * failure-class.ts) did not do its stage's work: the stage failed, and the pipeline stops there.
 */
export interface StageOutcome {
  stage: string;
  thread?: string;
  status: ThreadStatus | 'not_run';
  failure?: string;
  result: string;
  error?: string;
}

/** A stage whose thread did its work: completed, with no failure. */
const succeeded = (end: { status: string; failure?: string } | undefined): boolean => end?.status === 'completed' && end.failure === undefined;

export interface PipelineOutcome {
  run: string;
  pipeline: string;
  status: 'completed' | 'failed' | 'cancelled';
  stages: StageOutcome[];
}

export function findPipeline(pipelines: ReadonlyMap<string, Pipeline>, name: string): Pipeline {
  const pipeline = pipelines.get(name);
  if (pipeline !== undefined) return pipeline;
  const known = [...pipelines.keys()];
  throw new KiwiError('NOT_FOUND', `no pipeline ${JSON.stringify(name)}; ${known.length === 0 ? 'there are none in .ai/pipelines/' : `the pipelines are ${known.join(', ')}`}`);
}

export async function runPipeline(deps: PipelineDeps, start: PipelineCaller & { pipeline: string; inputs?: Record<string, unknown> }): Promise<PipelineOutcome> {
  const pipeline = findPipeline(deps.pipelines, start.pipeline);
  const defaults = Object.fromEntries(pipeline.inputs.filter((i) => i.default !== undefined).map((i) => [i.name, i.default]));
  const inputs = checkInputs(pipeline, { ...defaults, ...start.inputs }, 'pipeline');
  return drive(deps, pipeline, { id: randomUUID(), inputs, stages: new Map() }, start);
}

/** Goes on with a run that stopped; CONFLICT while a stage of it still runs, or once it completed. */
export async function resumePipeline(deps: PipelineDeps, resume: PipelineCaller & { run: string }): Promise<PipelineOutcome> {
  const state = await readPipelineRun(deps.store, resume.run);
  const pipeline = findPipeline(deps.pipelines, state.pipeline);
  const running = [...state.stages].filter(([, t]) => t.running).map(([name]) => name);
  if (running.length > 0) throw new KiwiError('CONFLICT', `pipeline run ${resume.run} is still running (stage ${running.join(', ')}); wait for it to end, or cancel it`);
  if (deps.driving?.(resume.run)) throw new KiwiError('CONFLICT', `pipeline run ${resume.run} is still running (between two stages); wait for it to end, or cancel it`);
  const all = pipeline.groups.flat();
  if (all.every((s) => succeeded(state.stages.get(s.name)?.end))) throw new KiwiError('CONFLICT', `pipeline run ${resume.run} completed; run the pipeline ${pipeline.name} again for a new run`);
  return drive(deps, pipeline, { id: state.run, inputs: state.inputs, stages: new Map([...state.stages].map(([name, t]) => [name, { thread: t.header.id, end: t.end }])) }, resume);
}

interface RunState {
  id: string;
  inputs: Record<string, unknown>;
  /** Stages that have a thread already (a resume): completed ones are reused, the others resumed. */
  stages: Map<string, { thread: string; end: { status: ThreadStatus; result: string; failure?: string } | undefined }>;
}

async function drive(deps: PipelineDeps, pipeline: Pipeline, state: RunState, caller: PipelineCaller): Promise<PipelineOutcome> {
  // The stages' rights: the caller's within the pipeline's permissions (each thread then intersects its directive's).
  const base = caller.context ?? deps.policy;
  const context = pipeline.permissions === undefined ? caller.context : directiveContext(base, `pipeline ${pipeline.name}`, pipeline.permissions).context;
  const journal = deps.journal?.({ id: state.id, pipeline: pipeline.name, inputs: state.inputs, client: caller.client });
  const signals = [caller.signal, journal?.signal].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length === 0 ? undefined : AbortSignal.any(signals);
  await journal?.written();
  caller.onEvent?.({ type: 'run', run: state.id, pipeline: pipeline.name });
  const ended = new Map<string, { status: string; result: string }>();
  const outcomes: StageOutcome[] = [];
  const note = (outcome: StageOutcome, reused: boolean): StageOutcome => {
    ended.set(outcome.stage, outcome);
    journal?.stageEnded(outcome);
    caller.onEvent?.({ type: 'stage-end', outcome, reused });
    return outcome;
  };
  let failed = false;
  for (const group of pipeline.groups) {
    if (failed || signal?.aborted) {
      outcomes.push(...group.map((s): StageOutcome => ({ stage: s.name, status: 'not_run', result: '' })));
      continue;
    }
    // A stage that does not complete cancels its siblings still running.
    const siblings = new AbortController();
    const stageSignal = signal === undefined ? siblings.signal : AbortSignal.any([signal, siblings.signal]);
    const settled = await Promise.all(
      group.map(async (stage) => {
        const outcome = await runStage(deps, stage, { pipeline, state, context, caller, signal: stageSignal, journal, ended, note });
        if (!succeeded(outcome)) siblings.abort(new KiwiError('TOOL_CANCELLED', `stage ${stage.name} of pipeline ${pipeline.name} ended ${outcome.failure ?? outcome.status}, so its parallel group stopped`));
        return outcome;
      }),
    );
    outcomes.push(...settled);
    failed = settled.some((o) => !succeeded(o));
  }
  const status = outcomes.every((o) => succeeded(o)) ? 'completed' : signal?.aborted ? 'cancelled' : 'failed';
  const outcome: PipelineOutcome = { run: state.id, pipeline: pipeline.name, status, stages: outcomes };
  journal?.end(outcome);
  return outcome;
}

interface StageRun {
  pipeline: Pipeline;
  state: RunState;
  context: PermissionContext | undefined;
  caller: PipelineCaller;
  signal: AbortSignal;
  journal: PipelineJournal | undefined;
  ended: ReadonlyMap<string, { status: string; result: string }>;
  note(outcome: StageOutcome, reused: boolean): StageOutcome;
}

async function runStage(deps: PipelineDeps, stage: PipelineStage, run: StageRun): Promise<StageOutcome> {
  const before = run.state.stages.get(stage.name);
  if (succeeded(before?.end)) return run.note({ stage: stage.name, thread: before?.thread, status: 'completed', result: before?.end?.result ?? '' }, true);
  // A thread that completed with a failure cannot go on: the stage runs again in a thread of its own.
  const resumable = before !== undefined && before.end?.status !== 'completed' ? before : undefined;
  const onStart = (thread: string): void => {
    run.journal?.stageStarted(stage, thread);
    run.caller.onEvent?.({ type: 'stage-start', stage: stage.name, thread, resumed: resumable !== undefined });
  };
  const common = {
    client: run.caller.client,
    ...(run.context ? { context: run.context } : {}),
    signal: run.signal,
    onStart,
    ...(run.caller.onRecord ? { onRecord: (r: ThreadRecord) => run.caller.onRecord?.(stage.name, r) } : {}),
  };
  try {
    const outcome =
      resumable !== undefined
        ? await deps.resume({ id: resumable.thread, ...common })
        : await deps.run({ directive: stage.directive, inputs: stageInputs(stage, run), ...(stage.modelTier ? { tier: stage.modelTier } : {}), pipeline: ref(stage, run), ...common });
    return run.note({ stage: stage.name, thread: outcome.id, status: outcome.status, ...(outcome.failure ? { failure: outcome.failure } : {}), result: outcome.result, ...(outcome.error ? { error: outcome.error } : {}) }, false);
  } catch (error) {
    // Refused before its thread ran (inputs that do not fit, a budget spent, a thread that may not be resumed).
    if (!isKiwiError(error)) throw error;
    return run.note({ stage: stage.name, ...(resumable ? { thread: resumable.thread } : {}), status: 'not_run', result: '', error: `${error.code}: ${error.message}` }, false);
  }
}

function stageInputs(stage: PipelineStage, run: StageRun): Record<string, string> {
  const values = { inputs: run.state.inputs, stages: run.ended };
  return Object.fromEntries(Object.entries(stage.inputs).map(([key, template]) => [key, renderTemplate(template, values)]));
}

function ref(stage: PipelineStage, run: StageRun): PipelineRef {
  return { run: run.state.id, name: run.pipeline.name, stage: stage.name, inputs: run.state.inputs };
}
