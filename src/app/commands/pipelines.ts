import { LOCAL_CLIENT } from '../../clients/client-auth.js';
import { loadRegistry } from '../../registry/load-registry.js';
import { pipelineShape } from '../../registry/pipeline-shape.js';
import { listPipelineRuns, readPipelineRun, type PipelineRunState } from '../../threads/pipeline-runs.js';
import type { PipelineCaller, PipelineEvent, PipelineOutcome } from '../../threads/run-pipeline.js';
import type { GatewayPipelines } from '../gateway-pipelines.js';
import { openGateway } from '../open-gateway.js';
import { openThreadStore } from '../state-backends.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { PIPELINES_HELP } from './pipelines-help.js';
import { projectOptions } from '../../cli/project-options.js';
import { createIndexProgress } from '../../cli/index-progress.js';
import { oneLine, pipelineEventText } from '../../threads/pipeline-event-text.js';
import { parseInputs, printRecord } from './directives.js';

const USAGE = PIPELINES_HELP.usage;

/**
 * `kiwi pipelines …`: the pipelines of `.ai/pipelines/` (and the files that did not load, with
 * why), a run here (each stage a directive thread, as `kiwi directives run` runs one; each
 * stage printed as it starts and ends, `--steps` prints its threads' lines too), the runs kept in
 * the threads' headers, one run's stages, and a run that stopped resumed. Exit codes: 0
 * completed, 1 failed or cancelled.
 */
export async function pipelinesCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, PIPELINES_HELP);
  const [action, target, ...rest] = positionals;
  const json = values.json === true;
  if (rest.length > 0 || (action === 'list' || action === 'runs' ? target !== undefined : target === undefined)) throw new UsageError(`usage: ${USAGE}`);
  if (values.input !== undefined && action !== 'run') throw new UsageError('--input is for run: a resumed run goes on with the inputs it started with');
  if (values.steps !== undefined && action !== 'run' && action !== 'resume') throw new UsageError(`--steps is for run and resume; usage: ${USAGE}`);
  const options = projectOptions(ctx, values);
  switch (action) {
    case 'list':
      return list(ctx, await loadRegistry({ projectDir: options.projectDir, ...(options.userDir ? { userDir: options.userDir } : {}) }), json);
    case 'runs':
    case 'show': {
      const { store, close } = await openThreadStore(options.projectDir, ctx.env);
      try {
        return action === 'runs' ? runs(ctx, await listPipelineRuns(store), json) : show(ctx, await readPipelineRun(store, target as string), json);
      } finally {
        await close();
      }
    }
    case 'run':
    case 'resume': {
      const caller: PipelineCaller = { client: LOCAL_CLIENT, ...(ctx.signal ? { signal: ctx.signal } : {}), ...(json ? {} : { onEvent: (e: PipelineEvent) => ctx.io.out(pipelineEventText(e)) }), ...(values.steps && !json ? { onRecord: (_: string, r) => printRecord(ctx, r) } : {}) };
      const inputs = parseInputs(values.input ?? []);
      const go = (p: GatewayPipelines): Promise<PipelineOutcome> => (action === 'run' ? p.run({ ...caller, pipeline: target as string, inputs }) : p.resume({ ...caller, run: target as string }));
      const log = (line: string): void => ctx.io.err(`kiwi: ${line}`);
      const gateway = await openGateway({ ...options, log, indexProgress: createIndexProgress(ctx.io), unattended: true, ...(ctx.signal ? { signal: ctx.signal } : {}) });
      try {
        return printOutcome(ctx, await go(gateway.pipelines), json);
      } finally {
        await gateway.close();
      }
    }
    default:
      throw new UsageError(`usage: ${USAGE}`);
  }
}

function list(ctx: CliContext, registry: Awaited<ReturnType<typeof loadRegistry>>, json: boolean): number {
  const pipelines = [...(registry.pipelines?.values() ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  if (json) ctx.io.out(JSON.stringify(pipelines.map((p) => ({ name: p.name, version: p.version, description: p.description, inputs: p.inputs, stages: p.groups, file: p.source.path }))));
  else if (pipelines.length === 0) ctx.io.out('no pipelines; they are YAML files under .ai/pipelines/ (docs/pipelines.md)');
  else for (const p of pipelines) ctx.io.out(`${p.name}  ${p.version}  ${pipelineShape(p)}  — ${p.description}`);
  for (const issue of registry.errors.filter((e) => e.kind === 'pipeline')) ctx.io.err(`kiwi: ${issue.message}`);
  return 0;
}

const runStatus = (r: PipelineRunState): string => {
  const threads = [...r.stages.values()];
  if (threads.some((t) => t.running)) return 'running';
  return threads.every((t) => t.end?.status === 'completed') ? 'stages completed' : 'stopped (`kiwi pipelines resume RUN` goes on)';
};

function runs(ctx: CliContext, found: PipelineRunState[], json: boolean): number {
  if (json) ctx.io.out(JSON.stringify(found.map((r) => ({ run: r.run, pipeline: r.pipeline, started_at: r.started_at, status: runStatus(r), stages: [...r.stages.keys()] }))));
  else if (found.length === 0) ctx.io.out('no pipeline runs yet; `kiwi pipelines run NAME` starts one');
  else for (const r of found) ctx.io.out(`${r.run}  ${r.started_at}  ${r.pipeline}  ${r.stages.size} stage(s) started, ${runStatus(r)}`);
  return 0;
}

function show(ctx: CliContext, run: PipelineRunState, json: boolean): number {
  const stages = [...run.stages].map(([stage, t]) => ({ stage, directive: t.header.directive, thread: t.header.id, status: t.end?.status ?? (t.running ? 'running' : 'cut_short'), result: t.end?.result ?? '' }));
  if (json) {
    ctx.io.out(JSON.stringify({ run: run.run, pipeline: run.pipeline, inputs: run.inputs, started_at: run.started_at, stages }));
    return 0;
  }
  ctx.io.out(`pipeline run ${run.run}: ${run.pipeline} ${JSON.stringify(run.inputs)}, started ${run.started_at}, ${runStatus(run)}`);
  // Newest first as the store lists them: shown in the order they started.
  for (const s of stages.reverse()) ctx.io.out(`  ${s.stage}  ${s.directive}  ${s.status}  thread ${s.thread}${s.result === '' ? '' : `\n    ${oneLine(s.result)}`}`);
  return 0;
}

function printOutcome(ctx: CliContext, outcome: PipelineOutcome, json: boolean): number {
  if (json) ctx.io.out(JSON.stringify(outcome, null, 2));
  else {
    const notRun = outcome.stages.filter((s) => s.status === 'not_run').map((s) => s.stage);
    ctx.io.out(`pipeline run ${outcome.run}: ${outcome.status}${notRun.length > 0 ? `; not run: ${notRun.join(', ')}` : ''}${outcome.status === 'completed' ? '' : ` — \`kiwi pipelines resume ${outcome.run}\` goes on`}`);
  }
  return outcome.status === 'completed' ? 0 : 1;
}
