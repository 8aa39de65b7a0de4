import { canonicalJson } from '../base/canonical-json.js';
import { KiwiError } from '../base/errors.js';
import type { ApprovalAsk } from '../proxy/approval.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import type { SplitOptions } from '../resolver/split-steps.js';
import { planSteps, runPlannedSteps, type PlannedStep } from '../resolver/step-plan.js';
import type { Candidate, FallbackUse, Resolution } from '../resolver/types.js';
import { askBackFor, type AskBack } from '../resolver/ask-back.js';
import { compactSchema } from '../resolver/compact-schema.js';
import { exampleCall } from '../resolver/example-call.js';
import type { Tool } from '../registry/types.js';
import type { ResolvedBy } from '../audit/audit-record.js';
import { notRunReason, repeatReason, shownResult, toolCallLimitReason, type FeedbackItem, type StepPlace } from './agent-feedback.js';
import { parseHelpIntent } from '../intent/help-intent.js';
import { GATEWAY_CALL_PREFIX, type LimitName, type LoopApprover, type LoopCall, type LoopEvent, type LoopHelp, type LoopMode } from './loop-types.js';
import { type LoopLimits } from './loop-limits.js';

export interface IntentWorkerDeps {
  resolve(intent: string, options: { context: string; signal?: AbortSignal }): Promise<Resolution>;
  call(call: LoopCall): Promise<CallOutcome>;
  /** Asks a person about a call that needs one; absent, such calls are denied. */
  approve?: LoopApprover;
  /** Answers help signals (a thread's); absent, `help stuck: …` is an intent like any other. */
  help?: LoopHelp;
  /** What the request has used so far (`turns`, `tokens`; the worker adds `tool_calls`), for hook conditions. */
  cost?: () => Record<string, number>;
  /** A tool of the catalog, for the closest tools of an unresolved intent: their one-line schemas and an example call (absent: ids only). */
  toolOf?: (id: string) => Tool | undefined;
  /**
   * Whether the caller's policy would let it run a candidate, asked before any arguments as the
   * tool proxy's authorize does: an ask-back offers only those (absent: every candidate).
   */
  mayRun?: (candidate: Candidate) => boolean;
  /** How an intent is split into ordered steps (split-steps.ts); give `actionWords` to let a plain "and" split. */
  steps?: SplitOptions;
  limits: LoopLimits;
  mode: LoopMode;
  /** Raw call ids; the worker prefixes GATEWAY_CALL_PREFIX. */
  newId: () => string;
  now: () => number;
  /** The request's signal: aborted work ends quietly, and a running tool is cancelled. */
  signal: AbortSignal;
  /** Where the worker's events go, in the order they happen. */
  push(event: LoopEvent): void;
  /** A resolver or tool proxy failure (not an abort): the loop stops the request with it. */
  onFailure(error: unknown): void;
}

/** What the message fed back to the agent needs from one turn. */
export interface TurnReport {
  items: FeedbackItem[];
  /** Calls handed to the client this turn (resolve-only mode). */
  handedOut: number;
}

export interface IntentWorker {
  /** Queues an intent; intents are worked on one at a time, in the order they closed. */
  enqueue(index: number, intent: string, context: string): void;
  /** Settles when every queued intent is done (never rejects: failures go to `onFailure`). */
  drained(): Promise<void>;
  /** An intent is queued or being worked on: events may arrive at any time. */
  readonly busy: boolean;
  /** Ends the turn: returns its report and starts an empty one. */
  endTurn(): TurnReport;
  /** Calls run (execute) or handed out (resolve-only) in the whole request. */
  readonly toolCalls: number;
  /** The limit an intent reached (`tool_calls` or `repeats`): the request ends after this turn. */
  readonly limit: LimitName | undefined;
  /** Why a help signal stopped the request (LoopHelp's `stop`): later intents are not run, and the request ends after this turn. */
  readonly stopped: string | undefined;
}

/**
 * The agent loop's intents: resolve, check the limits, run (or hand out) and report. Every intent
 * counts toward `maxToolCalls`, whatever became of it (run, denied, unresolved, refused as a
 * repeat): an unresolved intent costs a search and perhaps an argument-model request, so an
 * agent must not be able to write thousands of them. Past the limit an intent is neither
 * resolved nor run, only reported, and the request ends after the turn: a turn's feedback never
 * holds more than `maxToolCalls` items.
 *
 * An intent written as ordered steps ("check the quota and then send the report") runs them one
 * by one, each as if it were an intent of its own (and counted as one); the first that does not
 * succeed (unresolved, refused, denied, failed or an error result) stops the rest, and its item
 * in the feedback names the steps that did not run.
 */
export function createIntentWorker(deps: IntentWorkerDeps): IntentWorker {
  const { limits, signal } = deps;
  const repeats = new Map<string, number>();
  let queue: Promise<void> = Promise.resolve();
  let inFlight = 0;
  let handled = 0;
  let toolCalls = 0;
  let limit: LimitName | undefined;
  let stopped: string | undefined;
  let turn: TurnReport = emptyTurn();
  const hookLimits = { turns: limits.maxTurns, tool_calls: limits.maxToolCalls, tokens: limits.maxTokens, duration_ms: limits.maxDurationMs };

  /** An intent not run: the closest candidates the caller may run, their schemas and an exact call to copy (ask-back.ts, example-call.ts). */
  const unresolved = (index: number, intent: string, why: AskBack & { fallback?: FallbackUse; context?: string }, step?: StepPlace): void => {
    const { reason, missing, candidates, found } = deps.mayRun ? askBackFor(why, deps.mayRun) : why;
    const shown = candidates.slice(0, 3);
    const ids = shown.map((c) => c.tool);
    deps.push({ type: 'unresolved', index, intent, reason, missing, candidates: ids, ...(why.fallback ? { fallback: why.fallback } : {}) });
    const tools = shown.flatMap((c) => {
      const tool = c.item === undefined ? deps.toolOf?.(c.tool) : undefined;
      return tool ? [tool] : [];
    });
    const schemas = tools.map((t) => compactSchema(t));
    const top = shown[0] !== undefined && tools[0]?.id === shown[0].tool ? tools[0] : undefined;
    const example = top && exampleCall(top, found ? { values: found, text: { intent, ...(why.context ? { context: why.context } : {}) } } : undefined);
    turn.items.push({ kind: 'unresolved', intent, reason, missing, candidates: ids, ...(found ? { found } : {}), ...(schemas.length > 0 ? { schemas } : {}), ...(example ? { example } : {}), ...(step ? { step } : {}) });
  };

  // Not added to the turn's items: the request ends after this turn, so nothing is fed back.
  const overLimit = (index: number, intent: string): void => {
    limit ??= 'tool_calls';
    deps.push({ type: 'unresolved', index, intent, reason: toolCallLimitReason(limits.maxToolCalls), missing: [], candidates: [] });
  };

  /** One intent, or one step of one: true when its call ran and succeeded (or was handed out). */
  async function runOne(index: number, intent: string, context: string, planned?: Resolution, step?: StepPlace): Promise<boolean> {
    if (handled >= limits.maxToolCalls) {
      overLimit(index, intent);
      return false;
    }
    handled++;
    const resolution = planned ?? (await deps.resolve(intent, { context, signal }));
    if (signal.aborted) return false;
    if (resolution.status === 'unresolved') {
      const { reason, missing, found, fallback, candidates, stop } = resolution;
      unresolved(index, intent, { reason, missing, candidates, context, ...(found ? { found } : {}), ...(fallback ? { fallback } : {}), ...(stop ? { stop } : {}) }, step);
      return false;
    }
    const { call } = resolution;
    const key = `${call.tool}\u0000${canonicalJson(call.arguments)}`;
    const times = (repeats.get(key) ?? 0) + 1;
    repeats.set(key, times);
    if (times >= limits.maxRepeats) {
      limit ??= 'repeats';
      unresolved(index, intent, { reason: repeatReason(call, times), missing: [], candidates: [{ tool: call.tool, score: 1, ...(call.item ? { item: call.item } : {}) }] }, step);
      return false;
    }
    toolCalls++;
    const callId = `${GATEWAY_CALL_PREFIX}${deps.newId()}`;
    // The closest few, as the execution's record of how the intent was resolved.
    const candidates = resolution.candidates.slice(0, 3).map((c) => ({ tool: c.tool, score: c.score }));
    const { fallback } = resolution;
    deps.push({ type: 'call', index, callId, intent, call, confidence: resolution.confidence, candidates, ...(fallback ? { fallback } : {}) });
    if (deps.mode === 'resolve-only') {
      turn.handedOut++;
      return true;
    }
    const t0 = deps.now();
    const approver = deps.approve;
    const approve = approver && ((ask: ApprovalAsk) => approver(callId, ask, (where) => deps.push({ type: 'approval', index, callId, tool: call.tool, reason: ask.reason, timeoutMs: ask.timeoutMs, ...where })));
    const cost = { ...deps.cost?.(), tool_calls: toolCalls };
    const outcome = await deps.call({ target: { tool: call.tool, ...(call.item ? { item: call.item } : {}), args: call.arguments }, caller: { source: 'gateway' }, run: { signal, cost, limits: hookLimits, ...(approve ? { approve } : {}) }, ...(fallback ? { ext: { resolvedBy: resolvedBy(fallback) } } : {}) });
    const shown = shownResult(outcome, limits.maxResultChars);
    deps.push({ type: 'result', index, callId, tool: call.tool, ...shown, durationMs: Math.max(0, deps.now() - t0), proxyCallId: outcome.callId });
    const ok = !shown.isError;
    turn.items.push({ kind: 'outcome', intent, call, outcome, ...(step ? { step: ok ? { ...step, notRun: [] } : step } : {}) });
    // A hook's `abort`: the whole request stops here, as a failure that says why.
    if (outcome.abort !== undefined) throw new KiwiError('HOOK_ABORTED', `a hook aborted the run at ${call.tool}: ${outcome.abort}`);
    return ok;
  }

  async function runSteps(index: number, steps: readonly PlannedStep[], context: string): Promise<void> {
    const place = (i: number): StepPlace => ({ n: i + 1, of: steps.length, notRun: steps.slice(i + 1).map((s) => s.text) });
    await runPlannedSteps(steps, {
      run: (step, i) => runOne(index, step.text, context, step.resolution, place(i)),
      // The agent reads why in the failed step's item; the client sees each step that did not run.
      notRun: (step, _i, failed) => deps.push({ type: 'unresolved', index, intent: step.text, reason: notRunReason(place(failed)), missing: [], candidates: [] }),
      cancelled: () => signal.aborted,
    });
  }

  /** A help signal: answered by `deps.help`, never resolved; it counts toward maxToolCalls like any intent. */
  async function signalHelp(index: number, intent: string, help: LoopHelp): Promise<boolean> {
    const given = parseHelpIntent(intent);
    if (given === undefined) return false;
    handled++;
    const reply = await help(given, signal);
    if (signal.aborted) return true;
    deps.push({ type: 'help', index, intent, action: given.action, message: given.message, text: reply.text, ...(reply.checkpoint ? { checkpoint: reply.checkpoint } : {}), ...(reply.stop !== undefined ? { stop: reply.stop } : {}) });
    turn.items.push({ kind: 'note', intent, text: reply.text });
    stopped ??= reply.stop;
    return true;
  }

  async function work(index: number, intent: string, context: string): Promise<void> {
    if (signal.aborted) return;
    if (stopped !== undefined) {
      deps.push({ type: 'unresolved', index, intent, reason: stopped, missing: [], candidates: [] });
      return;
    }
    if (handled >= limits.maxToolCalls) return overLimit(index, intent);
    if (deps.help && (await signalHelp(index, intent, deps.help))) return;
    const plan = await planSteps(intent, (text) => deps.resolve(text, { context, signal }), deps.steps);
    if (signal.aborted) return;
    if (plan.kind === 'steps') return runSteps(index, plan.steps, context);
    if (plan.kind === 'single') {
      await runOne(index, intent, context);
      return;
    }
    handled++;
    deps.push({ type: 'unresolved', index, intent, reason: plan.reason, missing: [], candidates: [] });
    turn.items.push({ kind: 'refused', intent, reason: plan.reason });
  }

  return {
    enqueue(index, intent, context) {
      inFlight++;
      queue = queue.then(() =>
        work(index, intent, context)
          .catch((error: unknown) => {
            if (!signal.aborted) deps.onFailure(error); // cancelled work ends quietly; the loop reports why it stopped
          })
          .finally(() => {
            inFlight--;
          }),
      );
    },
    get busy() {
      return inFlight > 0;
    },
    drained: () => queue,
    endTurn() {
      const report = turn;
      turn = emptyTurn();
      return report;
    },
    get toolCalls() {
      return toolCalls;
    },
    get limit() {
      return limit;
    },
    get stopped() {
      return stopped;
    },
  };
}

function emptyTurn(): TurnReport {
  return { items: [], handedOut: 0 };
}

/** The fallback model's part in a call, as its audit record keeps it. */
function resolvedBy(used: FallbackUse): ResolvedBy {
  return {
    model: used.model,
    upstream: used.upstream,
    ms: used.ms,
    ...(used.inputTokens === undefined ? {} : { input_tokens: used.inputTokens }),
    ...(used.outputTokens === undefined ? {} : { output_tokens: used.outputTokens }),
    ...(used.usd === undefined ? {} : { usd: used.usd }),
  };
}
