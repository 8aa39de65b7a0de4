import { randomUUID } from 'node:crypto';
import { KiwiError } from '../errors.js';
import { DEFAULT_MARKER } from '../intent/intent-marker.js';
import { createIntentScanner, intentInstructions, type ScanEvent } from '../intent/intent-scanner.js';
import type { ChatEvent, ChatMessage, ChatProvider, ChatRequest, ChatUsage, FinishReason, NativeToolCall } from '../llm/types.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import type { SplitOptions } from '../resolver/split-steps.js';
import type { Resolution } from '../resolver/types.js';
import { feedbackMessage, limitNotice } from './agent-feedback.js';
import { createIntentWorker } from './intent-worker.js';
import { createOutbox } from './outbox.js';
import { menuText } from './tool-menu.js';
import { GATEWAY_CALL_PREFIX, type LimitName, type LoopApprover, type LoopBudget, type LoopCall, type LoopEvent, type LoopHelp, type LoopMode, type LoopRunOptions } from './loop-types.js';
import { checkLoopLimits, type LoopLimits } from './loop-limits.js';
import { textTail } from '../text-cut.js';
import type { BudgetStop } from '../budgets/budget-types.js';
import { budgetNotice } from '../budgets/budget-words.js';
import { countTurn, type TurnUsage } from '../budgets/turn-usage.js';

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
  /** A tool's one-line schema, shown with the closest tools when an intent is not run (absent: ids only). */
  describeTool?: (id: string) => string | undefined;
  /** How an intent written as ordered steps is split (split-steps.ts); absent: on sequencing words only. */
  steps?: SplitOptions;
  /**
   * Charged with each turn's usage and each call; a budget that ran out ends the request after
   * that turn. A turn cut short (the client went away, a limit, a failure) is charged too.
   */
  budget?: LoopBudget;
}

export interface LoopObserver {
  onText(text: string): void;
  onIntent(intent: string): void;
  /** The inside of an intent still being written, after each chunk that added to it. */
  onIntentProgress?(partial: string): void;
  /** The request is over (finished, failed or cancelled). */
  end(): void;
}

/** How much recent conversation the resolver gets as context: the user's request and this turn's text before the intent. */
const MAX_CONTEXT_CHARS = 4000;

type Stop = 'client' | 'duration' | 'consumer' | 'failure';

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
  const instructions = intentInstructions(markerOption); // also checks the marker
  const newId = deps.newId ?? randomUUID;
  const now = deps.now ?? (() => performance.now());
  if (options.signal?.aborted) throw cancelledByClient(options.signal.reason);

  const controller = new AbortController();
  const signal = controller.signal;
  let stop: Stop | undefined;
  // Set once the finish is out: nothing is in flight any more, so there is nothing to cancel.
  let finished = false;
  const halt = (why: Stop): void => {
    if (signal.aborted) return;
    stop = why;
    controller.abort(new KiwiError('TOOL_CANCELLED', `the agent loop was stopped (${why})`));
  };
  const onClientAbort = (): void => halt('client');
  options.signal?.addEventListener('abort', onClientAbort, { once: true });
  const timer = setTimeout(() => halt('duration'), limits.maxDurationMs);

  const outbox = createOutbox();
  const { push, until } = outbox;
  let limit: LimitName | undefined; // turns, tokens, budget or duration; the worker holds the intent limits
  let budgetStop: BudgetStop | undefined;
  const budget = deps.budget;
  const worker = createIntentWorker({
    resolve: deps.resolve,
    // The proxy's budget stage counts each call on the request's budget.
    call: budget === undefined ? deps.call : (call) => deps.call({ ...call, budget }),
    ...(deps.approve ? { approve: deps.approve } : {}),
    ...(deps.help ? { help: deps.help } : {}),
    cost: () => ({ turns, tokens: (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) }),
    ...(deps.describeTool ? { describeTool: deps.describeTool } : {}),
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
  let messages: ChatMessage[] = [];
  const usage: ChatUsage = {};
  let turns = 0;
  let reason: FinishReason = 'other';
  let upstream: AsyncIterator<ChatEvent> | undefined;
  let reading: Promise<unknown> | undefined;
  /** The turn streaming now, until it is charged; `heard` once the upstream answered at all. */
  let open: { counted: TurnUsage; heard: boolean } | undefined;
  /** Set when the loop ends by an exception (rather than a finish or the consumer leaving). */
  let threw = false;
  /**
   * Charges the open turn, and counts it in the request's usage. One the upstream refused before
   * answering (a 4xx, a refused connection) cost nothing; one it answered, or that was cut here
   * (the client, the duration, the consumer, a failure), is charged what it used so far: the
   * prompt it was sent and the output received, estimated.
   */
  const chargeCut = (): void => {
    const cut = open;
    open = undefined;
    if (cut === undefined || (!cut.heard && stop === undefined && threw)) return;
    const used = cut.counted.usage();
    addUsage(usage, used);
    deps.budget?.charge(used);
  };
  const stoppedBy = (): LimitName | undefined => limit ?? worker.limit;
  const finish = (): LoopEvent => {
    const stopped = stoppedBy();
    return { type: 'finish', reason, usage: { ...usage }, turns, toolCalls: worker.toolCalls, ...(stopped ? { limit: stopped } : {}), ...(stopped === 'budget' && budgetStop ? { budget: budgetStop } : {}) };
  };

  // `start` waits for the upstream's first event: a refused upstream request (401, 429, an
  // unknown model) then fails before any event, and the edge can still answer with its status.
  let started = false;
  const start = (): LoopEvent[] => {
    if (started) return [];
    started = true;
    return [{ type: 'start', id: `kiwi-${newId()}`, model: request.model }];
  };

  try {
    const menu = deps.menu ? await deps.menu(lastUser, signal).catch((error: unknown) => (signal.aborted ? Promise.reject(error) : [])) : [];
    const told = request.clientTools === undefined || request.clientTools.tools.length === 0 ? instructions : `${instructions}\n${CLIENT_TOOLS_NOTE}`;
    messages = withInstructions(request.messages, menu.length > 0 ? `${told}\n\n${menuText(menu, deps.marker ?? DEFAULT_MARKER)}` : told);
    for (;;) {
      if (signal.aborted) throw signal.reason;
      turns++;
      if (turns > 1) yield { type: 'turn', turn: turns };
      reason = 'other';
      const scanner = createIntentScanner(markerOption);
      let turnText = '';
      let recent = '';
      let intents = 0;
      const native: NativeToolCall[] = [];
      const scanned = (events: ScanEvent[]): void => {
        for (const e of events) {
          if (e.type === 'intent') {
            const index = intentCount++;
            intents++;
            push({ type: 'intent', index, text: e.text, raw: e.raw });
            deps.observer?.onIntent(e.text);
            worker.enqueue(index, e.text, resolveContext(lastUser, recent));
          } else {
            const text = e.type === 'text' ? e.text : e.raw;
            push({ type: 'text', text });
            deps.observer?.onText(text);
          }
          recent = textTail(recent + (e.type === 'text' ? e.text : e.raw), MAX_CONTEXT_CHARS);
        }
      };
      const counted = countTurn(messages);
      open = { counted, heard: false };
      upstream = deps.provider.stream({ ...request, messages: [...messages] }, signal)[Symbol.asyncIterator]();
      for (;;) {
        const next = upstream.next();
        reading = next;
        const r = worker.busy ? yield* until(next) : yield* outbox.quietly(next);
        if (open !== undefined) open.heard = true;
        yield* start();
        if (r.done) break;
        const event = r.value;
        if (event.type === 'text') {
          counted.output(event.text);
          // The full turn goes back into the conversation; its size is bounded by the provider's response cap.
          turnText += event.text;
          scanned(scanner.push(event.text));
          const partial = scanner.openIntent;
          if (partial !== undefined) deps.observer?.onIntentProgress?.(partial);
        } else if (event.type === 'tool_call') {
          counted.output(event.call.name + event.call.arguments);
          // An upstream id that looks like the gateway's would be sent back up as text.
          native.push(event.call.id.startsWith(GATEWAY_CALL_PREFIX) ? { ...event.call, id: `call_${newId()}` } : event.call);
        } else if (event.type === 'finish') {
          reason = event.reason;
          counted.reported(event.usage);
          const used = counted.usage();
          open = undefined;
          addUsage(usage, used);
          deps.budget?.charge(used);
        }
      }
      scanned(scanner.end());
      yield* until(worker.drained());
      const report = worker.endTurn();
      if (native.length > 0) {
        for (const call of native) yield { type: 'native_call', call };
        reason = 'tool_calls';
        break;
      }
      if (intents === 0) break;
      if (mode === 'resolve-only' && report.handedOut > 0) {
        reason = 'tool_calls';
        break;
      }
      if (worker.limit || worker.stopped !== undefined) break;
      if (turns >= limits.maxTurns) {
        limit = 'turns';
        break;
      }
      if (limits.maxTokens > 0 && (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) >= limits.maxTokens) {
        limit = 'tokens';
        break;
      }
      budgetStop = deps.budget?.exhausted();
      if (budgetStop) {
        limit = 'budget';
        break;
      }
      const feedback = feedbackMessage(report.items, { maxResultChars: limits.maxResultChars, ...markerOption });
      messages.push({ role: 'assistant', content: turnText }, { role: 'user', content: feedback });
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
    if (stop === 'client') throw cancelledByClient(error);
    if (stop !== 'duration') throw error;
    // Out of time: the cancelled tool calls still report their results, then the loop finishes.
    yield* until(worker.drained());
    yield* start();
    limit = 'duration';
    reason = 'other';
    chargeCut();
    yield { type: 'text', text: limitNotice(limit, limits) };
    finished = true;
    yield finish();
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onClientAbort);
    chargeCut(); // before `halt` below, which would make a turn the upstream refused look cut here
    if (!finished) halt('consumer'); // the consumer stopped early: cancel what is in flight
    deps.observer?.end();
    await reading?.then(noop, noop);
    await upstream?.return?.().then(noop, noop);
    await worker.drained();
  }
}

function noop(): void {}

/** Added to the instructions when the client sent tools of its own, so the agent does not write intents for them. */
const CLIENT_TOOLS_NOTE = '- The functions given to you as tools are the user\'s own: call them natively as usual, never as intents.';

function cancelledByClient(cause: unknown): KiwiError {
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

function resolveContext(lastUser: string, recent: string): string {
  const user = textTail(lastUser, MAX_CONTEXT_CHARS / 2);
  const turn = textTail(recent, MAX_CONTEXT_CHARS - user.length);
  return user.length > 0 && turn.length > 0 ? `${user}\n\n${turn}` : user + turn;
}

function addUsage(total: ChatUsage, usage: ChatUsage | undefined): void {
  if (usage?.inputTokens !== undefined) total.inputTokens = (total.inputTokens ?? 0) + usage.inputTokens;
  if (usage?.outputTokens !== undefined) total.outputTokens = (total.outputTokens ?? 0) + usage.outputTokens;
  if (usage?.estimated === true) total.estimated = true;
}
