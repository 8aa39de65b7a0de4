import { randomUUID } from 'node:crypto';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { DEFAULT_MARKER } from '../intent/intent-marker.js';
import { intentInstructions } from '../intent/intent-scanner.js';
import type { PlainWords } from '../intent/intent-instructions.js';
import type { ChatEvent, ChatMessage, ChatProvider, ChatRequest, ChatUsage, FinishReason } from '../llm/types.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import type { SplitOptions } from '../resolver/split-steps.js';
import type { Resolution } from '../resolver/types.js';
import { feedbackMessage, limitNotice } from './agent-feedback.js';
import { createIntentWorker, type IntentWorkerDeps } from './intent-worker.js';
import { createOutbox } from './outbox.js';
import { menuText } from './tool-menu.js';
import { type LimitName, type LoopApprover, type LoopObserver, type LoopCall, type LoopEvent, type LoopHelp, type LoopMode, type LoopRunOptions } from './loop-types.js';
import { checkLoopLimits, type LoopLimits } from './loop-limits.js';
import type { BudgetStop, RunBudget } from '../budgets/budget-types.js';
import { budgetNotice } from '../budgets/budget-words.js';
import { streamTurn } from './stream-turn.js';
import { createTurnCharges } from './turn-charges.js';
import { createLoopStop } from './loop-stop.js';

export interface AgentLoopDeps {
  provider: ChatProvider;
  resolve(intent: string, options: { context: string; signal?: AbortSignal }): Promise<Resolution>;
  /** The tool proxy's call, bound to the request's caller and conversation; the loop sends source 'gateway'. */
  call(call: LoopCall): Promise<CallOutcome>;
  /** Asks a person about a call that needs one (the chat's recorder does, through the kernel); absent, such calls are denied. */
  approve?: LoopApprover;
  /** Answers help signals (`[TOOL: help stuck: …]`) before resolution; absent (a chat), they are intents like any other. */
  help?: LoopHelp;
  limits?: Partial<LoopLimits>;
  marker?: string;
  /** Raw ids; the loop prefixes them: `kiwi-…` for the response, GATEWAY_CALL_PREFIX for calls (default randomUUID). */
  newId?: () => string;
  now?: () => number;
  /** Sees the agent's text and intents as they stream (prefetch); it must not throw or block. */
  observer?: LoopObserver;
  /**
   * Lines of likely tools for the user's latest message, added to the instructions (tool-menu.ts).
   * A failure here never fails the request: the agent goes without a menu.
   */
  menu?: (userText: string, signal: AbortSignal) => Promise<string[]>;
  /** A tool of the catalog, shown with the closest tools when an intent is not run (absent: ids only). */
  toolOf?: IntentWorkerDeps['toolOf'];
  /** Whether the caller may run a candidate: an intent not run offers only those (absent: every candidate). */
  mayRun?: IntentWorkerDeps['mayRun'];
  /** What the instructions tell the agent becomes of plain words the rules are not sure of (default: asked back). */
  plainWords?: PlainWords;
  /** How an intent written as ordered steps is split (split-steps.ts); absent: on sequencing words only. */
  steps?: SplitOptions;
  /**
   * Charged with each turn's usage and each call; a budget that ran out ends the request after
   * that turn. A turn cut short (the client went away, a limit, a failure) is charged too.
   */
  budget?: RunBudget;
}


/**
 * One client request: stream the agent's turn, run (or hand out) the intents it writes, feed the
 * results back, and go on until a turn has no intents or a limit stops it.
 *
 * Intents are worked on while the turn still streams, one at a time in order; their events join
 * the stream's in one outbox, so a call's `call`/`result` may come after later text but two
 * calls never interleave. When the client aborts `options.signal`, the upstream stream and any
 * running tool are cancelled and the iterator throws TOOL_CANCELLED (an abort is not a normal
 * end, so there is no `finish`). When the consumer stops iterating, everything in flight is
 * cancelled and awaited before `return()` settles. Upstream and resolver failures are thrown.
 * Event `index`es count intents across the whole request. Each turn's usage is the upstream's
 * count, or estimated from the prompt and the streamed text where it sends none (turn-usage.ts);
 * a turn that ends before its usage came (a client abort, a limit, a failure mid-stream) is
 * charged to the budget for what was sent and received. Every intent counts toward
 * `maxToolCalls`, and one asked for the `maxRepeats`-th time is not run (see intent-worker.ts):
 * either ends the request after that turn.
 *
 * The client's own tools (`request.clientTools`) go upstream beside the intent instructions. A
 * turn that calls them natively still has its intents run (or handed out) first; then the
 * native calls go to the client and the request ends with `tool_calls`: the client runs them
 * and sends their results in its next request. The intents' results are not fed back upstream
 * in this request (a message between the native calls and their results would break both
 * protocols); the client has them in the turn's text and sends them back with its history.
 */
export async function* runAgentLoop(deps: AgentLoopDeps, request: ChatRequest, options: LoopRunOptions): AsyncGenerator<LoopEvent> {
  const limits = checkLoopLimits(deps.limits);
  const mode = checkMode(options.mode);
  const markerOption = deps.marker === undefined ? {} : { marker: deps.marker };
  const instructions = intentInstructions({ ...markerOption, ...(deps.plainWords ? { plainWords: deps.plainWords } : {}) }); // also checks the marker
  const newId = deps.newId ?? randomUUID;
  const now = deps.now ?? (() => performance.now());
  if (options.signal?.aborted) throw cancelledByClient(options.signal.reason);

  const stop = createLoopStop(options.signal, limits.maxDurationMs);
  const { signal, halt } = stop;
  // Set once the finish is out: nothing is in flight any more, so there is nothing to cancel.
  let finished = false;

  const outbox = createOutbox();
  const { push, until } = outbox;
  let limit: LimitName | undefined; // turns, tokens, budget or duration; the worker holds the intent limits
  let budgetStop: BudgetStop | undefined;
  const charges = createTurnCharges(deps.budget);
  const usage = charges.usage;
  let turns = 0;
  const budget = deps.budget;
  const worker = createIntentWorker({
    resolve: deps.resolve,
    // The proxy's budget stage counts each call on the request's budget.
    call: budget === undefined ? deps.call : (call) => deps.call({ ...call, run: { ...call.run, budget } }),
    ...(deps.approve ? { approve: deps.approve } : {}),
    ...(deps.help ? { help: deps.help } : {}),
    cost: () => ({ turns, tokens: (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) }),
    ...(deps.toolOf ? { toolOf: deps.toolOf } : {}),
    ...(deps.mayRun ? { mayRun: deps.mayRun } : {}),
    ...(deps.steps ? { steps: deps.steps } : {}),
    limits,
    mode,
    newId,
    now,
    signal,
    push,
    onFailure(error) {
      outbox.fail(error);
      halt('failure');
    },
  });
  let intentCount = 0;
  const lastUser = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  let reason: FinishReason = 'other';
  let upstream: AsyncIterator<ChatEvent> | undefined;
  let reading: Promise<unknown> | undefined;
  /** Set when the loop ends by an exception (rather than a finish or the consumer leaving). */
  let threw = false;
  const stoppedBy = (): LimitName | undefined => limit ?? worker.limit;
  const finish = (): LoopEvent => {
    const stopped = stoppedBy();
    return { type: 'finish', reason, usage: { ...usage }, turns, toolCalls: worker.toolCalls, ...(stopped ? { limit: stopped } : {}), ...(stopped === 'budget' && budgetStop ? { budget: budgetStop } : {}) };
  };
  // `start` waits for the upstream's first event: a refused upstream request (401, 429, an
  // unknown model) then fails before any event, and the edge can still answer with its status.
  let started = false;
  const start = (): LoopEvent[] => (started ? [] : ((started = true), [{ type: 'start', id: `kiwi-${newId()}`, model: request.model }]));

  try {
    const menu = deps.menu ? await deps.menu(lastUser, signal).catch((error: unknown) => (signal.aborted ? Promise.reject(error) : [])) : [];
    const told = request.clientTools === undefined || request.clientTools.tools.length === 0 ? instructions : `${instructions}\n${CLIENT_TOOLS_NOTE}`;
    const messages = withInstructions(request.messages, menu.length > 0 ? `${told}\n\n${menuText(menu, deps.marker ?? DEFAULT_MARKER)}` : told);
    for (;;) {
      if (signal.aborted) throw signal.reason;
      turns++;
      if (turns > 1) yield { type: 'turn', turn: turns };
      const counted = charges.open(messages);
      upstream = deps.provider.stream({ ...request, messages: [...messages] }, signal)[Symbol.asyncIterator]();
      const turn = yield* streamTurn({
        events: upstream,
        charges,
        counted,
        outbox,
        worker,
        scanner: markerOption,
        lastUser,
        nextIndex: () => intentCount++,
        newId,
        ...(deps.observer ? { observer: deps.observer } : {}),
        reading: (next) => void (reading = next),
        started: start,
      });
      reason = turn.reason;
      yield* until(worker.drained());
      const report = worker.endTurn();
      if (turn.native.length > 0) {
        for (const call of turn.native) yield { type: 'native_call', call };
        reason = 'tool_calls';
        break;
      }
      if (turn.intents === 0) break;
      if (mode === 'resolve-only' && report.handedOut > 0) {
        reason = 'tool_calls';
        break;
      }
      if (worker.limit || worker.stopped !== undefined) break;
      limit = turnLimit(turns, usage, limits);
      budgetStop = limit === undefined ? deps.budget?.exhausted() : undefined;
      if (budgetStop) limit = 'budget';
      if (limit !== undefined) break;
      const feedback = feedbackMessage(report.items, { maxResultChars: limits.maxResultChars, ...markerOption });
      messages.push({ role: 'assistant', content: turn.text }, { role: 'user', content: feedback });
    }
    yield* start();
    const stopped = stoppedBy();
    if (stopped === 'budget') yield { type: 'text', text: budgetStop ? budgetNotice(budgetStop, Date.now()) : '' };
    else if (stopped) yield { type: 'text', text: limitNotice(stopped, limits) };
    finished = true;
    yield finish();
  } catch (error) {
    threw = true;
    if (outbox.failure) throw outbox.failure.error;
    if (stop.why === 'client') throw cancelledByClient(options.signal?.reason, error);
    if (stop.why !== 'duration') throw error;
    // Out of time: the cancelled tool calls still report their results, then the loop finishes.
    yield* until(worker.drained());
    yield* start();
    limit = 'duration';
    reason = 'other';
    charges.cut(false);
    yield { type: 'text', text: limitNotice(limit, limits) };
    finished = true;
    yield finish();
  } finally {
    stop.dispose();
    charges.cut(stop.why === undefined && threw); // before `halt` below, which would make a turn the upstream refused look cut here
    if (!finished) halt('consumer'); // the consumer stopped early: cancel what is in flight
    deps.observer?.end();
    await reading?.then(noop, noop);
    await upstream?.return?.().then(noop, noop);
    await worker.drained();
  }
}

/** The request's own limits after a turn: its turns and its tokens. */
function turnLimit(turns: number, usage: ChatUsage, limits: LoopLimits): LimitName | undefined {
  if (turns >= limits.maxTurns) return 'turns';
  if (limits.maxTokens > 0 && (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) >= limits.maxTokens) return 'tokens';
  return undefined;
}

function noop(): void {}

/** Added to the instructions when the client sent tools of its own, so the agent does not write intents for them. */
const CLIENT_TOOLS_NOTE = '- The functions given to you as tools are the user\'s own: call them natively as usual, never as intents.';

/** What the loop throws when its caller's signal stops it: the caller's own KiwiError when it said why (the gateway stopping), else a client cancel. */
function cancelledByClient(reason: unknown, cause: unknown = reason): KiwiError {
  if (isKiwiError(reason)) return reason;
  return new KiwiError('TOOL_CANCELLED', 'The client cancelled the request; the upstream model call and any running tool were stopped.', { cause });
}

function checkMode(mode: LoopMode): LoopMode {
  if (mode !== 'execute' && mode !== 'resolve-only') {
    throw new KiwiError('INVALID_INPUT', `Agent loop mode ${JSON.stringify(mode)} is unknown: use "execute" (the gateway runs the tools) or "resolve-only" (the client runs them).`);
  }
  return mode;
}

/** The intent instructions go in the client's first system message, or in a new one before everything. */
function withInstructions(messages: readonly ChatMessage[], instructions: string): ChatMessage[] {
  const i = messages.findIndex((m) => m.role === 'system');
  const first = messages[i];
  if (first === undefined) return [{ role: 'system', content: instructions }, ...messages];
  const out = [...messages];
  out[i] = { ...first, content: first.content.length > 0 ? `${first.content}\n\n${instructions}` : instructions };
  return out;
}


