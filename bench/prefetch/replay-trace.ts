import { canonicalJson } from '../../src/base/canonical-json.js';
import { runAgentLoop } from '../../src/loop/agent-loop.js';
import { type LoopObserver } from '../../src/loop/loop-types.js';
import type { CallOutcome, ToolCall } from '../../src/proxy/tool-call.js';
import type { Resolution } from '../../src/resolver/types.js';
import { createTraceProvider } from './trace-provider.js';
import type { Trace, TraceGold } from './trace-format.js';

/** How one side of the comparison resolves and calls: the plain resolver and proxy, or prefetch. */
export interface ReplayPipeline {
  resolve(intent: string, options: { context: string; signal?: AbortSignal }): Promise<Resolution>;
  call(call: ToolCall): Promise<CallOutcome>;
  /** Sees the stream (the prefetch session); absent when prefetch is off. */
  observer?: LoopObserver;
  /** Whether this outcome is a speculative result reused rather than a call run now. */
  reused?(outcome: CallOutcome): boolean;
}

export interface ReplayOptions {
  session: string;
  speed: number;
  signal?: AbortSignal;
  now?: () => number;
}

export interface IntentResult {
  turn: number;
  text: string;
  gold: TraceGold | null;
  /** From the intent's closing `]` in the stream to its result (or to its resolution when no call was made), ms. */
  latencyMs: number;
  /** What the agent was answered: the call made and how it ended, or why none was. Must be the same with prefetch on and off. */
  answer: string;
  /** The call's result text: compared too, but a read-only tool's output may change between the two runs on its own (a clock, `ls -la` times). */
  result: string;
  tool: string | null;
  /** Prefetch on: the resolution reused a search made ahead (a hit). */
  prefetchedSearch: boolean;
  /** Prefetch on: the result came from a speculative call. */
  speculativeResult: boolean;
}

export interface TraceReplay {
  id: string;
  group: string;
  intents: IntentResult[];
  /** Per turn with at least one intent: from its first chunk to its last intent's result, ms. */
  turnMs: number[];
}

/**
 * Replays one trace through the gateway's agent loop: the trace's turns stream from a replay
 * model on real timers, the loop's scanner finds the intents, and each is resolved and called
 * through `pipeline` exactly as the gateway would. Timing is taken at the loop's edges: when the
 * scanner hands out an intent (observer) and when its resolution or call returns.
 */
export async function replayTrace(trace: Trace, pipeline: ReplayPipeline, options: ReplayOptions): Promise<TraceReplay> {
  const now = options.now ?? (() => performance.now());
  const turnStart: number[] = [];
  let currentTurn = -1;
  const closed: Array<{ at: number; turn: number; text: string }> = [];
  const done: Array<{ at: number; answer: string; result: string; tool: string | null; hit: boolean; reused: boolean }> = [];
  let resolving = -1;

  const observer: LoopObserver = {
    onText: (text) => pipeline.observer?.onText(text),
    onIntentProgress: (partial) => pipeline.observer?.onIntentProgress?.(partial),
    onIntent(intent) {
      closed.push({ at: now(), turn: currentTurn, text: intent });
      pipeline.observer?.onIntent(intent);
    },
    end: () => pipeline.observer?.end(),
  };
  const provider = createTraceProvider(trace, {
    speed: options.speed,
    now,
    onTurnStart(turn, at) {
      currentTurn = turn;
      turnStart[turn] = at;
    },
  });
  const loop = runAgentLoop(
    {
      provider,
      observer,
      // The loop works on intents one at a time, in order: a call belongs to the last resolution.
      async resolve(intent, o) {
        const index = ++resolving;
        const resolution = await pipeline.resolve(intent, o);
        const hit = resolution.notes.some((n) => n.startsWith(PREFETCH_HIT_NOTE));
        done[index] = { at: now(), answer: unresolvedAnswer(resolution), result: '', tool: resolution.status === 'resolved' ? resolution.call.tool : null, hit, reused: false };
        return resolution;
      },
      async call(loopCall) {
        const index = resolving;
        const call = { ...loopCall, caller: { ...loopCall.caller, session: options.session, client: options.session } };
        const outcome = await pipeline.call(call);
        done[index] = { at: now(), answer: callAnswer(call, outcome), result: outcome.status === 'ok' ? outcome.result.text : '', tool: call.target.tool, hit: done[index]?.hit ?? false, reused: pipeline.reused?.(outcome) ?? false };
        return outcome;
      },
      limits: { maxTurns: Math.min(1000, trace.turns.length + 1), maxToolCalls: 10_000, maxRepeats: 1000, maxDurationMs: 3_600_000 },
    },
    { model: 'trace', messages: [{ role: 'user', content: trace.user }] },
    { mode: 'execute', ...(options.signal ? { signal: options.signal } : {}) },
  );
  for await (const _event of loop) {
    // The events are the client's view; the timings above are taken where the work happens.
  }

  const intents: IntentResult[] = closed.map((c, i) => {
    const d = done[i];
    const listed = trace.turns[c.turn]?.intents.find((x) => x.text === c.text);
    return {
      turn: c.turn,
      text: c.text,
      gold: listed?.gold ?? null,
      latencyMs: d ? d.at - c.at : Number.NaN,
      answer: d?.answer ?? 'not worked on (a loop limit stopped it)',
      result: d?.result ?? '',
      tool: d?.tool ?? null,
      prefetchedSearch: d?.hit ?? false,
      speculativeResult: d?.reused ?? false,
    };
  });
  const turnMs: number[] = [];
  trace.turns.forEach((_turn, t) => {
    const ends = closed.flatMap((c, i) => (c.turn === t && done[i] ? [(done[i] as { at: number }).at] : []));
    const start = turnStart[t];
    if (ends.length > 0 && start !== undefined) turnMs.push(Math.max(...ends) - start);
  });
  return { id: trace.id, group: trace.group, intents, turnMs };
}

/** How the prefetching resolver marks a resolution that reused a prefetched search. */
const PREFETCH_HIT_NOTE = 'prefetch: reused the search';

function unresolvedAnswer(r: Resolution): string {
  if (r.status === 'resolved') return `resolved ${r.call.tool} ${canonicalJson(r.call.arguments)} (not called)`;
  return `unresolved (best ${r.candidates[0]?.tool ?? 'none'}, missing ${r.missing.join(',') || 'none'})`;
}

function callAnswer(call: ToolCall, outcome: CallOutcome): string {
  const head = `${call.target.tool} ${canonicalJson(call.target.args ?? {})} -> ${outcome.status}`;
  if (outcome.status === 'ok') return `${head}${outcome.result.isError ? ' (the tool reported an error)' : ''}`;
  if (outcome.status === 'denied') return `${head}: ${outcome.reason}`;
  return `${head}: ${outcome.error.code} ${outcome.error.message}`;
}
