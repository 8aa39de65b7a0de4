import type { BudgetStop } from '../budgets/budget-types.js';
import type { ChatRequest, ChatUsage, FinishReason, NativeToolCall } from '../llm/types.js';
import type { Caller } from '../policy/caller.js';
import type { ApprovalAnswer, ApprovalAsk } from '../proxy/approval.js';
import type { HelpAction, HelpSignal } from '../proxy/help-signal.js';
import type { ToolCall, ToolCaller } from '../proxy/tool-call.js';
import type { FallbackUse, ToolCallSpec } from '../resolver/types.js';

/**
 * The contract between the agent loop and the protocol edges (OpenAI, Anthropic, the bench).
 * The loop speaks only these events; each edge renders them in its client's wire format.
 */

/** A call as the loop makes it: who it is for (but its `source`) is bound by whoever runs the loop. */
export type LoopCall = Omit<ToolCall, 'caller'> & { caller: Pick<ToolCaller, 'source'> };

/**
 * Asks a person about one of the loop's calls (by its `call` event's id). `announce` tells the
 * client that the call waits, with the ids a person answers to, once they can answer.
 */
export type LoopApprover = (callId: string, ask: ApprovalAsk, announce: (where: { stepId: string; executionId: string }) => void) => Promise<ApprovalAnswer>;

/**
 * Answers an agent's help signal (`[TOOL: help stuck: …]`, help-intent.ts), which the loop reads
 * before resolution: `text` is what the agent is told; with `stop`, the intents after it are not
 * run (`stop` says why) and the request ends after the turn.
 */
export type LoopHelp = (help: HelpSignal, signal: AbortSignal) => Promise<HelpReply>;

export interface HelpReply {
  text: string;
  checkpoint?: string;
  stop?: string;
}

/** `execute`: the gateway runs each intent. `resolve-only`: intents become native tool calls for the client to run. */
export type LoopMode = 'execute' | 'resolve-only';


/**
 * How the ids of the gateway's own calls (intents handed out in resolve-only mode) begin, so a
 * client's history tells them apart from the upstream's native calls: those go back up as
 * native calls, these as text (the upstream never made them).
 */
export const GATEWAY_CALL_PREFIX = 'call_kiwi_';

export type LoopEvent =
  /**
   * Exactly once, first. `id` is the gateway's response id; `model` what the client asked for;
   * `executionId` the kernel execution that tells the request's story, when it is recorded.
   */
  | { type: 'start'; id: string; model: string; executionId?: string }
  /** A new upstream turn begins (not sent for the first). */
  | { type: 'turn'; turn: number }
  /** Agent text outside intents, as it streams. */
  | { type: 'text'; text: string }
  /** An intent closed in the stream. `raw` is its source text, `[TOOL: …]` included. */
  | { type: 'intent'; index: number; text: string; raw: string }
  /**
   * The intent resolved to this call. In execute mode a `result` with the same `callId` follows;
   * in resolve-only mode this is the native tool call the client runs itself.
   */
  | { type: 'call'; index: number; callId: string; intent: string; call: ToolCallSpec; confidence: number; candidates?: { tool: string; score: number }[]; fallback?: FallbackUse }
  /**
   * The upstream called one of the client's own tools (`ChatRequest.clientTools`): the client
   * runs it. Sent when the turn's intents are done; the request then finishes with `tool_calls`.
   */
  | { type: 'native_call'; call: NativeToolCall }
  /**
   * The call waits for a person (execute mode): `kiwi approvals grant|deny STEP_ID`, or the
   * signal `step.approve` to the execution. Its `result` follows once they answer, or the
   * timeout (a denial) passes.
   */
  | { type: 'approval'; index: number; callId: string; tool: string; reason: string; timeoutMs: number; stepId: string; executionId: string }
  /** A help signal the loop answered itself (LoopHelp): nothing was resolved or run; `text` is what the agent was told. */
  | { type: 'help'; index: number; intent: string; action: HelpAction; message: string; text: string; checkpoint?: string; stop?: string }
  /** No call was made; `reason` is what the agent was told. */
  | { type: 'unresolved'; index: number; intent: string; reason: string; missing: string[]; candidates: string[]; fallback?: FallbackUse }
  /** What the call returned (execute mode). `text` is already capped to `maxResultChars`. */
  | {
      type: 'result';
      index: number;
      callId: string;
      tool: string;
      status: 'ok' | 'denied' | 'error';
      isError: boolean;
      /** A failed call's error code. */
      code?: string;
      text: string;
      durationMs: number;
      /** The tool proxy's id of the call: its audit record's `call_id`. */
      proxyCallId?: string;
    }
  /**
   * Exactly once, last, unless the iterator throws. `reason` is the last turn's; `tool_calls` when
   * calls were handed to the client (native ones, or intents in resolve-only mode); `limit` names
   * the limit that stopped it, and `budget` which budget, when it is `budget`.
   */
  | { type: 'finish'; reason: FinishReason; usage: ChatUsage; turns: number; toolCalls: number; limit?: LimitName; budget?: BudgetStop };

/** `budget`: a budget of the client, the request's spend or a directive run ran out (budgets/). */
export type LimitName = 'turns' | 'tool_calls' | 'duration' | 'repeats' | 'tokens' | 'budget';

export type LoopEventOf<T extends LoopEvent['type']> = Extract<LoopEvent, { type: T }>;

export interface LoopRunOptions {
  mode: LoopMode;
  /** Aborted when the client goes away: the upstream call and any running tool stop. */
  signal?: AbortSignal;
}

/**
 * What an edge calls for one client request: picks the upstream by `request.model` and runs the
 * loop. Throws (before the first event) UNKNOWN_MODEL or INVALID_INPUT; upstream failures are
 * thrown by the iterator, possibly after events were yielded.
 */
export type RunLoop = (request: ChatRequest, options: RunLoopOptions) => AsyncIterable<LoopEvent>;

export interface RunLoopOptions extends LoopRunOptions {
  /** The route the request came in on (`/v1/messages`…), for the kernel's record. */
  endpoint?: string;
  /** Who asked: the request's tool calls are checked, rate-limited and audited as this client's. */
  caller: Caller;
  /** The conversation the audit files the request's calls under. */
  conversation: string;
}

/** Sees the agent's text and intents as they stream (prefetch); it must not throw or block. */
export interface LoopObserver {
  onText(text: string): void;
  onIntent(intent: string): void;
  /** The inside of an intent still being written, after each chunk that added to it. */
  onIntentProgress?(partial: string): void;
  /** The request is over (finished, failed or cancelled). */
  end(): void;
}
