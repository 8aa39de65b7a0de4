import { followSignal } from '../base/abort.js';
import type { BudgetMeter } from '../budgets/budget-meter.js';
import type { ChatExecution, ChatJournal } from '../kernel/chat-journal.js';
import type { EventDraft } from '../kernel/types.js';
import type { ApprovalAsk } from '../proxy/approval.js';
import type { CallOutcome, ToolCall } from '../proxy/tool-call.js';
import { createChatApprovals, type ChatApprovalDeps, type ChatApprovals } from './chat-approvals.js';
import { CHAT_AGENT_ID } from './chat-execution.js';
import { executionSteps, type ExecutionSteps } from './execution-steps.js';
import { recordedCall } from './recorded-call.js';

/**
 * One run the gateway drives for a client — a chat, an MCP `execute` or `resolve`, a thread, a
 * pipeline — and what every kind needs, opened in one place: its kernel execution with a step per
 * call, a person asked on that step, its share of the client's budget (admitted before, so that a
 * run over budget is refused before it is recorded), and one signal that fires when the caller
 * goes away or someone cancels the execution through the kernel. Each kind adds only what is its
 * own (a chat its loop, a pipeline its stages) and ends its execution with its own events;
 * `release()` in its `finally`.
 */
export interface RunScope {
  /** Aborted when the caller's signal is, or when the execution is cancelled through the kernel. */
  readonly signal: AbortSignal;
  /** The run's share of the client's budget, when budgets are kept. */
  readonly meter: BudgetMeter | undefined;
  /** Its kernel execution, when runs are recorded. */
  readonly recorded: Recorded | undefined;
  /** Whether the execution was cancelled through the kernel (not the caller going away). */
  cancelled(): boolean;
  /**
   * A call of the run through `through` (the tool proxy): a step of its execution when it has one,
   * a person asked on that step (`announce` says where to answer).
   */
  call(call: ToolCall, details: Record<string, unknown>, through: (call: ToolCall) => Promise<CallOutcome>, announce: (ask: ApprovalAsk, stepId: string) => void): Promise<CallOutcome>;
  /** The run is over, whichever way: the budget's hold is released and the caller's signal let go. */
  release(): Promise<void>;
}

export interface Recorded {
  execution: ChatExecution;
  steps: ExecutionSteps;
  approvals: ChatApprovals;
}

export interface RunScopeDeps {
  /** Where runs are recorded as kernel executions; absent, none is. */
  journal?: ChatJournal;
  kernel: ChatApprovalDeps['kernel'];
  events?: ChatApprovalDeps['events'];
}

export interface RunStart {
  client: string;
  /** The execution's input and labels (the kernel's lists read labels only). */
  input: unknown;
  labels: Record<string, string>;
  /** How long a step may stay open (the run's longest duration). */
  stepDeadlineMs: number;
  /** The caller's: the run's signal follows it. */
  signal?: AbortSignal;
  /** What the client's budget admitted the run with (budgets.admit); released with the run. */
  meter?: BudgetMeter;
  /**
   * What the run is aborted with when its execution is cancelled through the kernel: a thread's
   * stop reads it; a chat and an MCP call say so themselves and abort without one.
   */
  cancelReason?: (executionId: string) => unknown;
}

export function openRunScope(deps: RunScopeDeps & { journal: ChatJournal }, start: RunStart): RunScope & { recorded: Recorded };
export function openRunScope(deps: RunScopeDeps, start: RunStart): RunScope;
export function openRunScope(deps: RunScopeDeps, start: RunStart): RunScope {
  const { meter } = start;
  const { controller, signal, unlink } = followSignal(start.signal);
  let cancelled = false;
  const execution = deps.journal?.begin({
    client: start.client,
    agentId: CHAT_AGENT_ID,
    input: start.input,
    labels: start.labels,
    onCancel() {
      cancelled = true;
      controller.abort(start.cancelReason?.(execution?.id ?? ''));
    },
  });
  const recorded = execution === undefined ? undefined : recordedParts(deps, execution, start.stepDeadlineMs);
  return {
    signal,
    meter,
    recorded,
    cancelled: () => cancelled,
    call: (call, details, through, announce) => (recorded === undefined ? through(call) : recordedCall(recorded, call, details, through, announce)),
    async release() {
      unlink();
      await meter?.end();
    },
  };
}

function recordedParts(deps: RunScopeDeps, execution: ChatExecution, stepDeadlineMs: number): Recorded {
  const steps = executionSteps(execution, stepDeadlineMs);
  const approvals = createChatApprovals({ execution, steps, kernel: deps.kernel, ...(deps.events ? { events: deps.events } : {}) });
  return { execution, steps, approvals };
}

/** The event that ends the execution of a run the gateway drives itself (a thread, a pipeline). */
export function runEndEvent(status: 'completed' | 'failed' | 'cancelled', ended: { output: unknown; error: string }): EventDraft {
  if (status === 'completed') return { type: 'execution.completed', payload: { output: ended.output } };
  return status === 'cancelled' ? { type: 'execution.cancelled', payload: { reason: ended.error } } : { type: 'execution.failed', payload: { error: ended.error } };
}
