import { randomUUID } from 'node:crypto';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { runAgentLoop, type AgentLoopDeps } from '../loop/agent-loop.js';
import type { LoopLimits } from '../loop/loop-limits.js';
import { loadDirectiveHooks } from '../hooks/hook-runner.js';
import type { BudgetMeter, DirectiveRun } from '../budgets/budget-meter.js';
import { directiveBudgetLimits } from '../budgets/directive-limits.js';
import { requestCap } from '../budgets/request-cap.js';
import { intentInstructions } from '../intent/intent-scanner.js';
import type { ChatProvider, ChatUsage } from '../llm/types.js';
import { directiveContext } from '../policy/directive-permissions.js';
import { checkTool, type PermissionContext } from '../policy/permission-context.js';
import { helpReplyText } from '../proxy/help-signal.js';
import type { ToolProxy } from '../proxy/tool-proxy.js';
import type { CallOutcome, ToolCall } from '../proxy/tool-call.js';
import type { Directive, Tool } from '../registry/types.js';
import type { ChatMessage } from '../llm/types.js';
import { createFailureTally } from './failure-class.js';
import { checkInputs } from '../registry/directive-input-values.js';
import { threadMessages } from './thread-inputs.js';
import { resumePoint } from './thread-resume.js';
import { directiveModel, findDirective, threadLimits } from './directive-choice.js';
import { environmentBrief, inEnvironment, loadThreadEnvironment, type EnvironmentSource } from './thread-environment.js';
import type { PipelineRef, ThreadHeader, ThreadRecord, ThreadStatus, ThreadStore, ThreadWriter } from './thread-store.js';
import { shownPath } from '../base/shown-path.js';
import { addUsage, createUsageTally, EMPTY_USAGE, withChildren, type PriceOf, type UsageSummary } from '../budgets/usage-summary.js';
import { countingBudget } from '../budgets/counting-budget.js';

/**
 * A directive run as a thread: the gateway's own agent loop with the directive as the system
 * prompt, only the tools its `<permissions>` declare (intersected with the caller's rights, never
 * wider: a call outside them is denied by the proxy and shown to the agent), its `<limits>` over
 * the gateway's, its hooks on every call, and the model its `<model tier>` maps to. Everything it
 * does is written to its store (thread-store.ts) as it happens, each line durable before the run
 * goes on; its calls are audited under the thread's id.
 */

export interface ThreadDeps {
  root: string;
  /** Where transcripts are written and read: `.ai/threads/`, or the Postgres replicas share. */
  store: ThreadStore;
  directives: ReadonlyMap<string, Directive>;
  tools: ReadonlyMap<string, Tool>;
  /** The project's policy: a thread's rights are the directive's within it (and within the caller's). */
  policy: PermissionContext;
  call(call: ToolCall): Promise<CallOutcome>;
  /** The tool proxy's help signals (audited, hooks fired); absent, `help stuck: …` resolves like any intent. */
  help?: ToolProxy['help'];
  resolve: AgentLoopDeps['resolve'];
  /** The provider, upstream and upstream model id for a model name (throws UNKNOWN_MODEL). */
  route(model: string): { provider: ChatProvider; model: string; upstream: string };
  /**
   * The run's budget (the gateway's budgets, when it has any): the directive's `<limits>` and the
   * client's, charged per turn and tool call. Throws BUDGET_EXCEEDED when one is already spent.
   * `cap` is held of the client's budget while the run goes on (budgets/budget-holds.ts).
   */
  admit?: (run: { client: string; route: { model: string; upstream: string }; directive: DirectiveRun; cap: ChatUsage }) => Promise<BudgetMeter>;
  /** The model a directive's tier maps to; undefined: the tier is not mapped. */
  tierModel(tier: string | undefined): string | undefined;
  /** The gateway's limits; a directive's `<limits>` replace the ones it sets. */
  limits: LoopLimits;
  toolOf?: AgentLoopDeps['toolOf'];
  steps?: AgentLoopDeps['steps'];
  /** How deep spawned threads may nest (default 3). */
  maxDepth?: number;
  /** Records each run as a kernel execution (the gateway's, when it records chats): its calls can then wait for a person. */
  journal?: (run: ThreadRun) => ThreadJournal;
  /** Reads `.ai/environments/` (absent: a start from an environment is refused). */
  environments?: EnvironmentSource;
  /** What a model's tokens cost, for the usage a run reports; absent, every model is unpriced. */
  priceOf?: PriceOf;
}

export interface ThreadRun {
  id: string;
  directive: string;
  inputs: Record<string, unknown>;
  client: string;
  /** The run's duration limit: no step of it outlives that. */
  maxDurationMs: number;
}

/** One run of a thread as the kernel keeps it (gateway/thread-execution.ts). */
export interface ThreadJournal {
  /** Fires when the run's execution is cancelled through the kernel. */
  signal: AbortSignal;
  /** A call as a step: `through` makes it, able to ask a person; `onWaiting` when one is asked. */
  call(call: ToolCall, through: (call: ToolCall) => Promise<CallOutcome>, onWaiting: (waiting: { stepId: string; reason: string; timeoutMs: number }) => void): Promise<CallOutcome>;
  end(outcome: ThreadOutcome): void;
  /** Resolves once the run's execution is written: a replica asked to cancel the thread finds it from then on. */
  written(): Promise<void>;
}

export interface ThreadStart {
  directive: string;
  inputs?: Record<string, unknown>;
  /** Who asked: the thread's calls are rate-limited and audited as this client's. */
  client: string;
  /** The caller's own narrower rights, if any: the thread gets the intersection. */
  context?: PermissionContext;
  /** The thread that spawns this one. */
  parent?: { id: string; depth: number };
  /** The pipeline run that starts it as one of its stages (written in its header). */
  pipeline?: PipelineRef;
  /** Overrides the tier's model. */
  model?: string;
  /** Overrides the directive's `<model tier>` (a thread tool's `config.model_tier`). */
  tier?: string;
  /** Starts from this environment (thread-environment.ts): its directive version, inputs, tools and knowledge. */
  environment?: string;
  /** Runs again a thread that failed, on the version of its directive annealed from it (anneal-on-failure.ts). */
  retry?: { of: string; directive: Directive };
  signal?: AbortSignal;
  /** Each record as it is written (`kiwi directives run` prints them). */
  onRecord?: (record: ThreadRecord) => void;
  /** The thread exists (its first line is written): its id, before it runs. */
  onStart?: (id: string) => void;
}

/** A thread that stopped (failed, cancelled, cut short by a crash) goes on where it stopped. */
export interface ThreadResume extends Pick<ThreadStart, 'client' | 'context' | 'model' | 'signal' | 'onRecord' | 'onStart'> {
  id: string;
  /** A person's word to the agent, e.g. the answer it escalated for. */
  message?: string;
}

export interface ThreadOutcome {
  id: string;
  status: ThreadStatus;
  steps_taken: number;
  /** The agent's last turn. */
  result: string;
  /** The limit that ended it, when one did. */
  limit?: string;
  /** Why it failed or was cancelled. */
  error?: string;
  /** Why it failed (failure-class.ts): absent when it succeeded. */
  failure?: string;
  /** Its calls are in the audit log under this session. */
  audit: { session: string };
  /** It is the retry of a failed thread, on the version annealed from it; or why that failed thread was not annealed. */
  anneal?: { failed_thread: string; from_version: string; version: string } | { failed_thread: string; refused: string };
  /** What this run used, by model: its own turns and fallback calls, and the threads it spawned and waited for (own + children). */
  usage: UsageSummary;
}

/** How a thread's outcome reads to whoever started it (a thread tool's result, an MCP answer). */
export function threadOutcomeBody(outcome: ThreadOutcome): Record<string, unknown> {
  return { thread: outcome.id, status: outcome.status, steps_taken: outcome.steps_taken, result: outcome.result, ...(outcome.limit ? { limit: outcome.limit } : {}), ...(outcome.error ? { error: outcome.error } : {}), ...(outcome.anneal ? { anneal: outcome.anneal } : {}) };
}

const DEFAULT_MAX_DEPTH = 3;

export async function runThread(deps: ThreadDeps, start: ThreadStart): Promise<ThreadOutcome> {
  const env = start.environment === undefined ? undefined : await loadThreadEnvironment(deps.environments, start.environment, start.directive);
  const directive = start.retry?.directive ?? env?.directive ?? findDirective(deps.directives, start.directive);
  const depth = (start.parent?.depth ?? 0) + 1;
  const maxDepth = deps.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (depth > maxDepth) throw new KiwiError('POLICY_DENIED', `thread ${start.parent?.id} may not spawn ${directive.name}: threads nest at most ${maxDepth} deep`);
  const inputs = checkInputs(directive, { ...env?.inputs, ...start.inputs });
  const setup = prepare(deps, directive, env === undefined ? start : inEnvironment(env, start, deps.policy));
  const id = randomUUID();
  const messages = threadMessages(directive, inputs, setup.allowed, env && environmentBrief(env));
  // Refused before anything is written when a budget is already spent.
  const meter = await admit(deps, start.client, setup, id, messages);
  const header: ThreadHeader = { type: 'thread', id, directive: directive.name, version: directive.version, ...(env ? { environment: env.name } : {}), ...(start.retry ? { retry_of: start.retry.of } : {}), inputs, model: setup.model, client: start.client, ...(start.parent ? { parent: start.parent.id } : {}), ...(start.pipeline ? { pipeline: start.pipeline } : {}), depth, started_at: new Date().toISOString() };
  return endingHold(meter, async () => {
    const writer = await deps.store.create(header);
    return closing(writer, () => drive(deps, setup, { id, depth, client: start.client, writer, meter, inputs, messages, done: { turns: 0, calls: 0, steps: 0 } }, start));
  });
}

/**
 * Goes on with a thread that stopped: the same id and file, the directive as it is now, what
 * the thread did before given to the agent as a record, and its `<limits>` counting what it
 * already used (a thread that used up its turns or calls is not resumed).
 */
export async function resumeThread(deps: ThreadDeps, resume: ThreadResume): Promise<ThreadOutcome> {
  const lines = await deps.store.read(resume.id);
  const header = lines[0];
  if (header?.type !== 'thread') throw new KiwiError('INVALID_INPUT', `thread ${resume.id} has no header line; it cannot be resumed`);
  // A thread from an environment goes on in it, as it was saved: never with the directive's wider tools.
  const env = header.environment === undefined ? undefined : await loadThreadEnvironment(deps.environments, header.environment, header.directive);
  const directive = env?.directive ?? findDirective(deps.directives, header.directive);
  const inputs = checkInputs(directive, header.inputs);
  const setup = prepare(deps, directive, env === undefined ? resume : inEnvironment(env, resume, deps.policy));
  const point = resumePoint(lines, directive, setup.limits, resume.message);
  const [system, user] = threadMessages(directive, inputs, setup.allowed, env && environmentBrief(env)) as [ChatMessage, ChatMessage];
  const messages: ChatMessage[] = [system, { role: 'user', content: `${user.content}\n\n${point.recap}` }];
  const meter = await admit(deps, resume.client, setup, header.id, messages);
  return endingHold(meter, async () => {
    const writer = await deps.store.reopen(header.id, { type: 'resume', client: resume.client, model: setup.model, ...(resume.message === undefined ? {} : { message: resume.message }), at: new Date().toISOString() });
    const limits = { ...setup.limits, maxTurns: setup.limits.maxTurns - point.done.turns, maxToolCalls: setup.limits.maxToolCalls - point.done.calls };
    return closing(writer, () => drive(deps, { ...setup, limits }, { id: header.id, depth: header.depth, client: resume.client, writer, meter, inputs, messages, done: point.done }, resume));
  });
}

/** The thread is let go however its run ends: a run whose last line could not be written included. */
async function closing(writer: ThreadWriter, run: () => Promise<ThreadOutcome>): Promise<ThreadOutcome> {
  try {
    return await run();
  } finally {
    await writer.close();
  }
}

/** Runs the thread; whichever way it ends (a writer that could not open included), what its meter held is released. */
async function endingHold(meter: BudgetMeter | undefined, run: () => Promise<ThreadOutcome>): Promise<ThreadOutcome> {
  try {
    return await run();
  } finally {
    await meter?.end();
  }
}

/** What a thread of this directive runs with: its model, its rights, its hooks and its limits. */
interface Setup {
  directive: Directive;
  model: string;
  route: ReturnType<ThreadDeps['route']>;
  context: PermissionContext;
  allowed: string[];
  limits: LoopLimits;
  scope: NonNullable<NonNullable<ToolCall['run']>['directive']>;
}

function prepare(deps: ThreadDeps, directive: Directive, start: Pick<ThreadStart, 'context' | 'model' | 'tier'>): Setup {
  const model = directiveModel(deps.tierModel, directive, start);
  const route = deps.route(model);
  const { context } = directiveContext(start.context ?? deps.policy, directive.name, directive.permissions);
  const named = directive.tools?.map((t) => t.name);
  const allowed = [...deps.tools.keys()].filter((id) => checkTool(context, id).allowed && (named === undefined || named.includes(id))).sort();
  // Hooks name their file as people read it.
  const hooks = loadDirectiveHooks(shownPath(deps.root, directive.source.path), directive.hooks ?? []);
  const l = directive.limits;
  const scope = { name: directive.name, hooks, limits: { ...(l.turns === undefined ? {} : { turns: l.turns }), ...(l.tokens === undefined ? {} : { tokens: l.tokens }) }, ...(named === undefined ? {} : { tools: named }) };
  return { directive, model, route, context, allowed, limits: threadLimits(deps.limits, directive), scope };
}

/** The run is the thread: its usage is totalled under the thread's id, across resumes; it holds one turn's cap while it runs. */
function admit(deps: ThreadDeps, client: string, setup: Setup, id: string, messages: ChatMessage[]): Promise<BudgetMeter | undefined> {
  const { directive, route } = setup;
  const cap = requestCap({ messages }, setup.limits, intentInstructions());
  return deps.admit?.({ client, route, directive: { directive: directive.name, run: id, limits: directiveBudgetLimits(directive.limits), startedAt: Date.now() }, cap }) ?? Promise.resolve(undefined);
}

interface Run {
  id: string;
  depth: number;
  client: string;
  writer: ThreadWriter;
  meter: BudgetMeter | undefined;
  messages: ChatMessage[];
  inputs: Record<string, unknown>;
  /** What the thread did before this run (a resume): turns are numbered on from there. */
  done: { turns: number; calls: number; steps: number };
}

async function drive(deps: ThreadDeps, setup: Setup, run: Run, start: Pick<ThreadStart, 'signal' | 'onRecord' | 'onStart'>): Promise<ThreadOutcome> {
  const { directive, context } = setup;
  const { id, depth, writer, meter } = run;
  const journal = deps.journal?.({ id, directive: directive.name, inputs: run.inputs, client: run.client, maxDurationMs: setup.limits.maxDurationMs });
  // Said started once its first line and its execution are written: from then on any replica can read it and cancel it.
  await journal?.written();
  start.onStart?.(id);
  const signals = [start.signal, journal?.signal].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length === 0 ? undefined : AbortSignal.any(signals);
  const tally = createFailureTally();
  // One line after another, each durable before the run goes on: the loop awaits each. A line that
  // could not be written fails every line after it (the end included), which ends the run.
  let written: Promise<void> = Promise.resolve();
  const record = (r: ThreadRecord): Promise<void> => {
    written = written.then(async () => {
      await writer.append(r);
      tally.observe(r);
      start.onRecord?.(r);
    });
    return written;
  };

  let spawned = 0;
  // Called by the tool proxy just before this thread spawns one: past `<limits spawns>` the spawn is refused.
  const onSpawn = (): void => {
    const most = directive.limits.spawns;
    if (most !== undefined && spawned >= most) throw new KiwiError('POLICY_DENIED', `directive ${directive.name} may spawn at most ${most} thread(s) (<limits spawns>); this one would be number ${spawned + 1}`);
    spawned++;
    meter?.countSpawn();
  };
  // This run's own tokens (every turn the loop charges, however it ends, and the resolver's
  // fallback model), and what the threads it spawned and waited for used, theirs included.
  const own = createUsageTally(deps.priceOf ?? (() => undefined));
  let children = EMPTY_USAGE;
  const onChildUsage = (used: UsageSummary): void => {
    children = addUsage(children, used);
  };
  let steps = run.done.steps;
  let turn = run.done.turns + 1;
  let text = '';
  let last = '';
  const endTurn = (): Promise<void> => {
    if (text.trim() === '') return written;
    const done = record({ type: 'turn', turn, text });
    last = text;
    text = '';
    return done;
  };
  const end = async (status: ThreadStatus, extra: { limit?: string; error?: string; code?: string } = {}, given?: string): Promise<ThreadOutcome> => {
    await endTurn();
    const result = given ?? last;
    const failure = tally.classify({ status, ...extra });
    const usage = withChildren(own.summary(), children);
    await record({ type: 'end', status, result, steps_taken: steps, ...extra, ...(failure ? { failure } : {}), usage, ended_at: new Date().toISOString() });
    const outcome = { id, status, steps_taken: steps, result, ...(extra.limit ? { limit: extra.limit } : {}), ...(extra.error ? { error: extra.error } : {}), ...(failure ? { failure } : {}), audit: { session: id }, usage };
    journal?.end(outcome);
    return outcome;
  };
  const caller = { caller: { session: id, client: run.client, source: 'thread' as const, context }, run: { directive: setup.scope, thread: { id, depth, onSpawn, onChildUsage } } };
  const signalHelp = deps.help;
  const call = (c: ToolCall): Promise<CallOutcome> => {
    if (journal === undefined) return deps.call(c);
    // Announced from inside the call, which cannot wait for it: the line is queued, and the call's
    // result is written after it. Should it fail, the next line the run awaits says so.
    const waiting = (w: { stepId: string; reason: string }): void => {
      void endTurn().catch(() => undefined);
      void record({ type: 'approval', tool: c.target.tool, step_id: w.stepId, reason: w.reason }).catch(() => undefined);
    };
    return journal.call(c, deps.call, waiting);
  };

  try {
    const loop = runAgentLoop(
      {
        provider: setup.route.provider,
        resolve: deps.resolve,
        call: (c) => call({ ...c, caller: caller.caller, run: { ...c.run, ...caller.run } }),
        // Audited and hooked like a call; an escalation ends the thread with its message (below).
        ...(signalHelp
          ? {
              help: async (given, signal) => {
                const outcome = await signalHelp({ caller: caller.caller, run: { ...caller.run, signal } }, given);
                return { text: helpReplyText(given.action, outcome, 'thread'), ...(outcome.checkpoint ? { checkpoint: outcome.checkpoint } : {}), ...(given.action === 'escalate' && outcome.refused === undefined ? { stop: 'not run: the agent escalated (help escalate) before this intent, so the thread ended' } : {}) };
              },
            }
          : {}),
        limits: setup.limits,
        budget: countingBudget(meter, (used) => own.add(setup.route.model, used)),
        ...(deps.toolOf ? { toolOf: deps.toolOf } : {}),
        // What the thread may run: the project's rights ∩ the client's ∩ the directive's, and its named tools.
        mayRun: (c) => c.item === 'knowledge' || (checkTool(context, c.tool).allowed && (setup.scope.tools === undefined || setup.scope.tools.includes(c.tool))),
        ...(deps.steps ? { steps: deps.steps } : {}),
      },
      { model: setup.route.model, messages: run.messages },
      { mode: 'execute', ...(signal ? { signal } : {}) },
    );
    for await (const event of loop) {
      switch (event.type) {
        case 'text':
          text += event.text;
          break;
        case 'turn':
          await endTurn();
          turn = run.done.turns + event.turn;
          break;
        case 'call':
          if (event.fallback !== undefined) own.add(event.fallback.model, event.fallback);
          await endTurn(); // the text that led to the call comes before it
          await record({ type: 'call', call_id: event.callId, tool: event.call.tool, arguments: event.call.arguments });
          break;
        case 'result':
          steps++;
          await record({ type: 'result', call_id: event.callId, tool: event.tool, status: event.status, ...(event.isError && event.status === 'ok' ? { is_error: true } : {}), ...(event.code === undefined ? {} : { code: event.code }), text: event.text });
          break;
        case 'unresolved':
          if (event.fallback !== undefined) own.add(event.fallback.model, event.fallback);
          await endTurn();
          await record({ type: 'unresolved', intent: event.intent, reason: event.reason });
          break;
        case 'help':
          await endTurn();
          await record({ type: 'help', action: event.action, message: event.message, ...(event.checkpoint ? { checkpoint: event.checkpoint } : {}) });
          // Only an escalation that was taken ends the thread; one refused (the rate limit) leaves the agent to go on.
          if (event.stop !== undefined) return await end('escalated', {}, event.message);
          break;
        case 'finish':
          return await end('completed', event.limit ? { limit: event.limit } : {});
        default:
          break;
      }
    }
    return await end('failed', { error: 'the agent loop ended without finishing' });
  } catch (error) {
    const cancelled = signal?.aborted === true || (isKiwiError(error) && error.code === 'TOOL_CANCELLED');
    // Whoever cancelled says why (`cancel`, a shutdown, the kernel) better than the loop's words for it.
    const why = signal?.aborted === true && signal.reason instanceof Error ? signal.reason : error;
    return end(cancelled ? 'cancelled' : 'failed', { error: why instanceof Error ? why.message : String(why), ...(isKiwiError(error) ? { code: error.code } : {}) });
  }
}
