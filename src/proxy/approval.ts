import type { ApprovalRules } from '../policy/policy-hooks.js';
import { matchesAny } from '../policy/permission-context.js';
import type { Tool } from '../registry/types.js';

/**
 * Calls that wait for a person: a tool that says so (`requires_approval: true`), a tool the
 * policy's `approvals.tools` names, or a hook's `require_approval`. The caller is the one who can
 * reach a person (a chat's client sees "waiting for approval"); a caller that cannot is denied,
 * and no answer within the policy's timeout is a denial too.
 */

export interface ApprovalAsk {
  callId: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** Why it needs a person, as they will read it. */
  reason: string;
  timeoutMs: number;
  /** Aborted when the answer is no longer wanted: the timeout passed (reason `timeout`) or the call was cancelled. */
  signal: AbortSignal;
}

export interface ApprovalAnswer {
  approved: boolean;
  /** Who answered: a client key's name, a person's name given with the answer, or `timeout`. */
  decidedBy: string;
  reason?: string;
}

export type AskApproval = (ask: ApprovalAsk) => Promise<ApprovalAnswer>;

/** Why this call must wait for a person, or undefined when it need not. */
export function approvalReason(tool: Tool | undefined, toolId: string, rules: ApprovalRules | undefined, hookReason: string | undefined): string | undefined {
  if (tool?.requiresApproval === true) return `tool ${toolId} says every call needs a person's approval (requires_approval)`;
  if (rules !== undefined && matchesAny(rules.tools, toolId)) return `the policy's approvals.tools names ${toolId}`;
  return hookReason;
}

/**
 * The person's answer, or a denial: by `timeout` when none came in time, by `gateway` when the
 * caller has no way to ask. A cancelled call rejects with the signal's reason.
 */
export async function waitForApproval(ask: AskApproval | undefined, question: Omit<ApprovalAsk, 'signal'>, signal: AbortSignal | undefined): Promise<ApprovalAnswer> {
  if (ask === undefined) {
    return { approved: false, decidedBy: 'gateway', reason: `${question.reason}, and this caller cannot ask a person (only a chat, an MCP call or a thread on a running gateway can); the call was not run` };
  }
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<ApprovalAnswer>((resolve) => {
    timer = setTimeout(() => {
      // Settled before the abort, so an asker that rejects on it does not win the race.
      resolve({ approved: false, decidedBy: 'timeout', reason: `no one answered within ${Math.round(question.timeoutMs / 1000)} s, so the call was denied` });
      controller.abort('timeout');
    }, question.timeoutMs);
  });
  try {
    if (signal?.aborted) throw signal.reason;
    return await Promise.race([ask({ ...question, signal: controller.signal }), timedOut]);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}
