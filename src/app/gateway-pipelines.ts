import type { Project } from '../project/open-project.js';
import { resumePipeline, runPipeline, type PipelineCaller, type PipelineDeps, type PipelineOutcome } from '../threads/run-pipeline.js';
import type { GatewayThreads } from './gateway-threads.js';

/** Pipelines run on the gateway's threads: each stage through `threads.run`/`resume`, so `cancel` and `close` reach it. */
export interface GatewayPipelines {
  run(start: PipelineCaller & { pipeline: string; inputs?: Record<string, unknown> }): Promise<PipelineOutcome>;
  resume(resume: PipelineCaller & { run: string }): Promise<PipelineOutcome>;
}

export function createGatewayPipelines(deps: { project: Project; threads: GatewayThreads; journal?: PipelineDeps['journal'] }): GatewayPipelines {
  const pipelineDeps: PipelineDeps = {
    pipelines: deps.project.registry.pipelines ?? new Map(),
    policy: deps.project.policy,
    store: deps.threads.store,
    run: (start) => deps.threads.run(start),
    resume: (resume) => deps.threads.resume(resume),
    ...(deps.journal ? { journal: deps.journal } : {}),
  };
  return {
    run: (start) => runPipeline(pipelineDeps, start),
    resume: (resume) => resumePipeline(pipelineDeps, resume),
  };
}
