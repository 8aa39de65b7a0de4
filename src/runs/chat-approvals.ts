import { lookEveryMs, watchExecution, type KernelEventsBus } from '../contracts/kernel-events-bus.js';
import { KiwiError } from '../base/errors.js';
import type { ChatExecution } from '../kernel/chat-journal.js';
import type { Kernel } from '../kernel/open-kernel.js';
import type { ApprovalAnswer, ApprovalAsk } from '../proxy/approval.js';
import type { ExecutionSteps } from './execution-steps.js';
import type { LoopApprover } from '../loop/loop-types.js';

/**
 * A chat's calls that wait for a person, through the kernel (§12.2): the chat's step is written
 * as waiting and its execution blocked, so `kiwi approvals list|grant|deny` and the signal
 * `step.approve` answer it like any agent's. The chat reads the answer when the kernel's events
 * bus says its execution has new events (an answer through another replica comes over Redis),
 * and every `pollMs` all the same. When the proxy's timeout passes, the denial is written as the
 * signal of `timeout`.
 */

export interface ChatApprovals {
  approve: LoopApprover;
  /** recordChat opened the step of the loop's call `callId`. */
  stepOpened(callId: string, stepId: string): void;
  /** The same for a call whose step is already open (an MCP call's, a thread's). */
  approveStep(stepId: string, ask: ApprovalAsk, announce: (where: { stepId: string; executionId: string }) => void): Promise<ApprovalAnswer>;
}

export interface ChatApprovalDeps {
  execution: ChatExecution;
  steps: ExecutionSteps;
  kernel(): Promise<Pick<Kernel, 'approvalOf' | 'signals'>>;
  /** Word of committed events (contracts/kernel-events-bus.ts). */
  events?: KernelEventsBus;
  /** Default 250 ms, 5 s when the bus carries every replica's events. */
  pollMs?: number;
}

/** Steps waited for at once, a bound on a loop that never opens the step it asks about. */
const MAX_WAITING = 64;

export function createChatApprovals(deps: ChatApprovalDeps): ChatApprovals {
  const pollMs = deps.pollMs ?? lookEveryMs(deps.events, 250);
  const opened = new Map<string, string>();
  const waiting = new Map<string, (stepId: string) => void>();

  function stepOf(callId: string, signal: AbortSignal): Promise<string> {
    const known = opened.get(callId);
    if (known !== undefined) return Promise.resolve(known);
    if (waiting.size >= MAX_WAITING) return Promise.reject(new KiwiError('INTERNAL', 'too many calls wait for their step to open'));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        waiting.delete(callId);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiting.set(callId, (stepId) => {
        signal.removeEventListener('abort', onAbort);
        resolve(stepId);
      });
    });
  }

  async function answerOf(stepId: string, signal: AbortSignal): Promise<ApprovalAnswer> {
    // Listening before the first read: an answer written while it reads still wakes it.
    const watch = watchExecution(deps.events, deps.execution.id);
    try {
      for (;;) {
        if (signal.aborted) throw signal.reason;
        const decision = await (await deps.kernel()).approvalOf(deps.execution.id, stepId);
        if (decision !== undefined) return decision;
        await watch.wait(pollMs, signal);
      }
    } finally {
      watch.close();
    }
  }

  /** The timeout's denial written as an answer, unless a person's got there first. */
  async function deniedByTimeout(stepId: string): Promise<void> {
    const kernel = await deps.kernel();
    const payload = { step_id: stepId, approved: false, reason: 'no one answered in time, so the call was denied', decided_by: 'timeout' };
    await kernel.signals.send(deps.execution.id, { signalType: 'step.approve', payload }).catch(() => undefined);
  }

  const refused = (ask: ApprovalAsk, why: string): ApprovalAnswer => ({ approved: false, decidedBy: 'gateway', reason: `${ask.reason}, but ${why}; the call was not run` });
  const NOT_RECORDED = 'this chat is not recorded as an execution (the kernel is too far behind), so no one can answer';

  async function approveStep(stepId: string, ask: ApprovalAsk, announce: (where: { stepId: string; executionId: string }) => void): Promise<ApprovalAnswer> {
    if (!deps.execution.recorded) return refused(ask, NOT_RECORDED);
    if (!(await deps.execution.block(stepId, { tool_id: ask.tool, arguments: ask.arguments, reason: ask.reason }))) return refused(ask, 'this chat has ended');
    announce({ stepId, executionId: deps.execution.id });
    // The kernel writes how it ended (step.failed, or step.dispatched and then the chat's own result).
    try {
      const answer = await answerOf(stepId, ask.signal);
      if (!answer.approved) deps.steps.settledElsewhere(stepId);
      return answer;
    } catch (error) {
      if (ask.signal.reason === 'timeout') {
        deps.steps.settledElsewhere(stepId);
        void deniedByTimeout(stepId);
      }
      throw error;
    }
  }

  return {
    stepOpened(callId, stepId) {
      opened.set(callId, stepId);
      waiting.get(callId)?.(stepId);
      waiting.delete(callId);
    },

    async approve(callId, ask, announce) {
      // Before waiting for a step that an unrecorded chat never opens.
      if (!deps.execution.recorded) return refused(ask, NOT_RECORDED);
      return approveStep(await stepOf(callId, ask.signal), ask, announce);
    },

    approveStep,
  };
}

/** What a client is told while its call waits (a chat's stream, an MCP client's progress or log). */
export function waitingText(reason: string, stepId: string, timeoutMs: number): string {
  return `waiting for approval (${reason}): a person answers with \`kiwi approvals grant ${stepId}\` or \`kiwi approvals deny ${stepId}\` within ${Math.round(timeoutMs / 1000)} s`;
}
