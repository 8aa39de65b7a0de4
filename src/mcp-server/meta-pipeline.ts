import { ownedBy } from '../clients/access.js';
import { isKiwiError, KiwiError } from '../base/errors.js';
import type { Pipeline } from '../registry/types.js';
import { pipelineEventText } from '../threads/pipeline-event-text.js';
import { checkRunId, readPipelineRun, type PipelineRunState } from '../threads/pipeline-runs.js';
import { findPipeline, type PipelineCaller, type PipelineOutcome } from '../threads/run-pipeline.js';
import type { ThreadSummary } from '../threads/thread-store.js';
import { threadLineText } from '../threads/thread-text.js';
import { errorResult, refusals, type MetaContext, type MetaPipelines, type MetaResult } from './meta-common.js';

/**
 * Pipelines over MCP, where the gateway runs them: `execute(item_type="pipeline", action="run")`
 * runs one as the caller (its client, its rights within the pipeline's within each stage's
 * directive's; a kernel execution of the caller's client) and answers its outcome, each stage's
 * start, end and thread lines sent as progress meanwhile; with `async: true` it answers the run's
 * id once its first stage has started. `status`, `cancel` and `resume` then take that id. A
 * client sees only its own runs: another's is answered as no run at all.
 */

export const PIPELINE_ACTIONS = ['run', 'status', 'cancel', 'resume'] as const;
type PipelineAction = (typeof PIPELINE_ACTIONS)[number];

/** Notifications carry a line each, cut to this (as for a directive's thread). */
const NOTIFY = { turn: 2000, item: 500 };

interface PipelineArgs {
  action: string;
  item_id: string;
  parameters?: Record<string, unknown> | undefined;
  async?: boolean | undefined;
  environment?: string | undefined;
}

export async function executePipeline(ctx: MetaContext, args: PipelineArgs, signal?: AbortSignal): Promise<MetaResult> {
  const action = PIPELINE_ACTIONS.find((a) => a === args.action);
  if (action === undefined) return errorResult('INVALID_INPUT', `action "${args.action}" does not act on a pipeline: "run" runs one (item_id: its name, parameters: its inputs); "status", "cancel" and "resume" take the run id that "run" answered`);
  if (args.environment !== undefined) return errorResult('INVALID_INPUT', "environment is for a directive's \"run\": each stage of a pipeline runs the directive its file names");
  const pipelines = ctx.pipelines;
  if (pipelines === undefined) {
    return errorResult('INVALID_INPUT', `pipelines run on the gateway (\`kiwi serve\`'s /mcp), which runs each stage as a thread; this server does not. On this machine, \`kiwi pipelines run ${action === 'run' ? args.item_id : 'NAME'} --input KEY=VALUE\` runs one and \`kiwi pipelines show RUN\` shows a run`);
  }
  const parameters = args.parameters ?? {};
  if (action !== 'run' && Object.keys(parameters).length > 0) return errorResult('INVALID_INPUT', `"${action}" takes no parameters: item_id is the run id${action === 'resume' ? '; a run goes on with the inputs it started with' : ''}`);
  if (args.async && (action === 'status' || action === 'cancel')) return errorResult('INVALID_INPUT', `async is for "run" and "resume": "${action}" answers at once`);
  const options = { async: args.async === true, ...(signal ? { signal } : {}) };
  return refusals(async () => (action === 'run' ? run(ctx, pipelines, args.item_id, parameters, options) : onRun(ctx, pipelines, action, args.item_id, options)));
}

async function run(ctx: MetaContext, pipelines: MetaPipelines, name: string, inputs: Record<string, unknown>, options: { async: boolean; signal?: AbortSignal }): Promise<MetaResult> {
  const pipeline = findPipeline(ctx.project.registry.pipelines ?? new Map(), name);
  const missing = pipeline.inputs.filter((i) => i.required && i.default === undefined && (inputs[i.name] === undefined || inputs[i.name] === null));
  if (missing.length > 0) {
    const example = `parameters={${missing.map((m) => `"${m.name}": …`).join(', ')}}`;
    return errorResult('INVALID_INPUT', `pipeline ${pipeline.name} needs ${missing.map((m) => `${m.name} (${m.description || m.type})`).join(', ')}; call it again with ${example}`, { missing_inputs: missing, inputs: pipeline.inputs });
  }
  const start = { pipeline: pipeline.name, inputs, ...caller(ctx) };
  if (options.async) return started(await pipelines.background({ start }));
  return outcomeResult(await pipelines.run({ ...start, ...(options.signal ? { signal: options.signal } : {}), ...notifying(ctx) }));
}

async function onRun(ctx: MetaContext, pipelines: MetaPipelines, action: Exclude<PipelineAction, 'run'>, id: string, options: { async: boolean; signal?: AbortSignal }): Promise<MetaResult> {
  const state = await ownRun(ctx, pipelines, action, id);
  const pipeline = ctx.project.registry.pipelines?.get(state.pipeline);
  switch (action) {
    case 'status':
      return statusResult(pipeline, state, await pipelines.state(id));
    case 'cancel':
      if (await pipelines.cancel(id)) return statusResult(pipeline, state, 'cancelling');
      if ([...state.stages.values()].some((t) => t.running)) throw new KiwiError('CONFLICT', `pipeline run ${id} runs in another process that records no execution for it (\`kiwi pipelines run\`), which alone can cancel it`);
      throw new KiwiError('CONFLICT', `pipeline run ${id} is not running; "resume" goes on with it`);
    case 'resume': {
      const resume = { run: id, ...caller(ctx) };
      if (options.async) return started(await pipelines.background({ resume }));
      return outcomeResult(await pipelines.resume({ ...resume, ...(options.signal ? { signal: options.signal } : {}), ...notifying(ctx) }));
    }
  }
}

/** The caller's run, or NOT_FOUND: one of another client looks the same as none, and the message names no store. */
async function ownRun(ctx: MetaContext, pipelines: MetaPipelines, action: string, id: string): Promise<PipelineRunState> {
  try {
    checkRunId(id);
  } catch {
    throw new KiwiError('INVALID_INPUT', `item_id ${JSON.stringify(id.slice(0, 80))} is not a pipeline run id: "${action}" takes the id that "run" answered (a UUID); to run a pipeline by its name, use action "run"`);
  }
  const none = new KiwiError('NOT_FOUND', `no pipeline run ${id} of client ${ctx.caller.client}`);
  let state: PipelineRunState;
  try {
    state = await readPipelineRun(pipelines.store, id);
  } catch (error) {
    throw isKiwiError(error) && error.code === 'NOT_FOUND' ? none : error;
  }
  if (![...state.stages.values()].every((t) => ownedBy(ctx.caller, t.header.client))) throw none;
  return state;
}

function caller(ctx: MetaContext): Pick<PipelineCaller, 'client' | 'context'> {
  return { client: ctx.caller.client, ...(ctx.caller.context ? { context: ctx.caller.context } : {}) };
}

/** Each stage's start and end, and each line its thread writes, go to the client as they happen. */
function notifying(ctx: MetaContext): Pick<PipelineCaller, 'onEvent' | 'onRecord'> {
  const notify = ctx.notify;
  if (notify === undefined) return {};
  return { onEvent: (e) => notify(pipelineEventText(e)), onRecord: (stage, r) => notify(`[${stage}] ${threadLineText(r, NOTIFY)}`) };
}

function started(answer: { run: string } | { outcome: PipelineOutcome }): MetaResult {
  if ('outcome' in answer) return outcomeResult(answer.outcome);
  const body = { run: answer.run, status: 'running' };
  const next = `execute(item_type="pipeline", action="status", item_id="${answer.run}") says where it stands; "cancel" stops it.`;
  return { content: [{ type: 'text', text: `${JSON.stringify(body, null, 2)}\n${next}` }], structuredContent: body };
}

function outcomeResult(outcome: PipelineOutcome): MetaResult {
  const body = { ...outcome };
  const next = outcome.status === 'completed' ? '' : `\nexecute(item_type="pipeline", action="resume", item_id="${outcome.run}") goes on: completed stages are reused, the stopped ones resumed in their threads.`;
  return { content: [{ type: 'text', text: `${JSON.stringify(body, null, 2)}${next}` }], structuredContent: body, ...(outcome.status === 'completed' ? {} : { isError: true }) };
}

/**
 * Where a run stands: `running` while a stage's thread runs or the gateway (or its execution)
 * says so; else as its execution ended; else as its threads did (`cut_short`: a stage's process
 * died). Stages in the pipeline's order; one without a thread `waiting` or `not_run`.
 */
function statusResult(pipeline: Pipeline | undefined, state: PipelineRunState, known: string | undefined): MetaResult {
  const threads = [...state.stages.values()];
  const names = pipeline?.groups.flat().map((s) => s.name) ?? [];
  const order = [...names, ...[...state.stages.keys()].reverse().filter((n) => !names.includes(n))];
  // A thread that runs is what runs now, whatever an earlier execution of the run said.
  const status = known === 'cancelling' ? known : threads.some((t) => t.running) ? 'running' : (known ?? ended(state, names));
  const stages = order.map((stage) => {
    const t = state.stages.get(stage);
    return t === undefined ? { stage, status: status === 'running' || status === 'cancelling' ? 'waiting' : 'not_run' } : stageView(stage, t);
  });
  const body = { run: state.run, pipeline: state.pipeline, inputs: state.inputs, started_at: state.started_at, status, stages };
  const next = status === 'running' ? `"cancel" stops it.` : status === 'completed' || status === 'cancelling' ? '' : `"resume" goes on with it.`;
  return { content: [{ type: 'text', text: `${JSON.stringify(body, null, 2)}${next === '' ? '' : `\n${next}`}` }], structuredContent: body };
}

/** How a run no process drives and no execution records ended, as its stages' threads did. */
function ended(state: PipelineRunState, names: string[]): string {
  const wanted = names.length > 0 ? names : [...state.stages.keys()];
  if (wanted.every((n) => state.stages.get(n)?.end?.status === 'completed')) return 'completed';
  return [...state.stages.values()].some((t) => t.end === undefined) ? 'cut_short' : 'failed';
}

function stageView(stage: string, t: ThreadSummary): Record<string, unknown> {
  const status = t.end?.status ?? (t.running ? 'running' : 'cut_short');
  return { stage, directive: t.header.directive, thread: t.header.id, status, result: t.end?.result ?? '', ...(t.end?.error ? { error: t.end.error } : {}) };
}
