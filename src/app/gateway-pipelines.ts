import { KiwiError, isKiwiError } from '../base/errors.js';
import type { Kernel } from '../kernel/open-kernel.js';
import { TERMINAL_STATUSES, type ExecutionStatus } from '../kernel/types.js';
import type { Project } from '../project/open-project.js';
import type { ThreadStore } from '../threads/thread-store.js';
import { resumePipeline, runPipeline, type PipelineCaller, type PipelineDeps, type PipelineOutcome } from '../threads/run-pipeline.js';
import type { GatewayThreads } from './gateway-threads.js';

type PipelineStart = PipelineCaller & { pipeline: string; inputs?: Record<string, unknown> };
type PipelineResume = PipelineCaller & { run: string };
type RunState = 'running' | 'completed' | 'failed' | 'cancelled';

/**
 * Pipelines run on the gateway's threads: each stage through `threads.run`/`resume`, so `cancel`
 * and `close` reach it. The runs this gateway drives are tracked by id, so a run is cancelled here
 * whichever request started it; one another replica drives is cancelled through its execution.
 */
export interface GatewayPipelines {
  run(start: PipelineStart): Promise<PipelineOutcome>;
  resume(resume: PipelineResume): Promise<PipelineOutcome>;
  /**
   * Starts one that runs on after the caller is answered (MCP's async mode): answers its run id
   * once its first stage's thread has started (from then on its state is in the thread store),
   * or its outcome when it ended before any did; throws why it could not start.
   */
  background(job: { start: PipelineStart } | { resume: PipelineResume }): Promise<{ run: string } | { outcome: PipelineOutcome }>;
  /** Cancels a run driven here, or through its execution in the kernel; false when neither runs it. */
  cancel(run: string): Promise<boolean>;
  /** `running` while driven here; else its newest execution's status (a resume is a new execution); undefined without one. */
  state(run: string): Promise<RunState | undefined>;
  /** Where the stages' threads are, and so the runs' state (pipeline-runs.ts). */
  store: ThreadStore;
  /** Cancels every run driven here and waits for their ends to be written. */
  close(): Promise<void>;
}

/** Runs in the background at once, as for threads: more are refused. */
const MAX_BACKGROUND = 8;

export function createGatewayPipelines(deps: { project: Project; threads: GatewayThreads; journal?: PipelineDeps['journal']; kernel?: () => Promise<Kernel> }): GatewayPipelines {
  // Every run this gateway drives, by id, from its first event to its end.
  const running = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  const pipelineDeps: PipelineDeps = {
    pipelines: deps.project.registry.pipelines ?? new Map(),
    policy: deps.project.policy,
    store: deps.threads.store,
    run: (start) => deps.threads.run(start),
    resume: (resume) => deps.threads.resume(resume),
    ...(deps.journal ? { journal: deps.journal } : {}),
    driving: (run) => running.has(run),
  };
  const tracked = <T extends PipelineCaller>(job: T, drive: (job: T) => Promise<PipelineOutcome>): Promise<PipelineOutcome> => {
    const controller = new AbortController();
    const entry = { controller, done: Promise.resolve() as Promise<unknown> };
    let id: string | undefined;
    const outcome = drive({
      ...job,
      signal: job.signal === undefined ? controller.signal : AbortSignal.any([job.signal, controller.signal]),
      onEvent(event) {
        if (event.type === 'run') running.set((id = event.run), entry);
        job.onEvent?.(event);
      },
    }).finally(() => {
      if (id !== undefined) running.delete(id);
    });
    entry.done = outcome.catch(() => undefined);
    return outcome;
  };
  const run = (start: PipelineStart): Promise<PipelineOutcome> => tracked(start, (s) => runPipeline(pipelineDeps, s));
  const resume = (r: PipelineResume): Promise<PipelineOutcome> => tracked(r, (j) => resumePipeline(pipelineDeps, j));
  /** The run's newest execution, which the journal labels with the run's id. */
  const execution = async (id: string): Promise<{ id: string; status: ExecutionStatus } | undefined> => {
    if (deps.kernel === undefined || deps.journal === undefined) return undefined;
    const page = await (await deps.kernel()).executions.list({ labels: { pipeline_run: id }, limit: 1 });
    return page.executions[0];
  };

  let inBackground = 0;
  return {
    run,
    resume,
    store: deps.threads.store,
    background(job) {
      if (inBackground >= MAX_BACKGROUND) return Promise.reject(new KiwiError('RATE_LIMITED', `${MAX_BACKGROUND} pipeline runs already run in the background; wait for one to end, or cancel one`));
      inBackground++;
      return new Promise((answer, refuse) => {
        const given = 'start' in job ? job.start : job.resume;
        let id: string | undefined;
        const onEvent: PipelineCaller['onEvent'] = (event) => {
          if (event.type === 'run') id = event.run;
          if (event.type === 'stage-start' && id !== undefined) answer({ run: id });
          given.onEvent?.(event);
        };
        // Not the caller's signal: the run outlives the request that started it.
        const outcome = 'start' in job ? run({ ...withoutSignal(job.start), onEvent }) : resume({ ...withoutSignal(job.resume), onEvent });
        outcome.then((o) => answer({ outcome: o }), refuse).finally(() => inBackground--);
      });
    },
    async cancel(id) {
      const here = running.get(id);
      if (here !== undefined) {
        here.controller.abort(new KiwiError('TOOL_CANCELLED', `pipeline run ${id} was cancelled`));
        return true;
      }
      // Driven by another replica: cancelling its execution reaches it (runs/pipeline-execution.ts).
      const live = await execution(id);
      if (live === undefined || TERMINAL_STATUSES.has(live.status)) return false;
      try {
        await (await deps.kernel?.())?.executions.cancel(live.id);
        return true;
      } catch (error) {
        if (isKiwiError(error) && error.code === 'CONFLICT') return false; // it ended meanwhile
        throw error;
      }
    },
    async state(id) {
      if (running.has(id)) return 'running';
      // A kernel that cannot be reached now leaves the run's threads to say where it stands.
      const status = (await execution(id).catch(() => undefined))?.status;
      if (status === undefined) return undefined;
      return status === 'completed' || status === 'failed' || status === 'cancelled' ? status : 'running';
    },
    async close() {
      const all = [...running.values()];
      for (const r of all) r.controller.abort(new KiwiError('TOOL_CANCELLED', 'the gateway is shutting down'));
      await Promise.allSettled(all.map((r) => r.done));
    },
  };
}

function withoutSignal<T extends PipelineCaller>({ signal: _signal, ...rest }: T): Omit<T, 'signal'> {
  return rest;
}
