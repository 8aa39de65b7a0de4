import type { ApprovalRules } from '../../policy/policy-hooks.js';
import { DEFAULT_APPROVAL_TIMEOUT_MS } from '../../policy/policy-hooks.js';
import { approvalReason, waitForApproval } from '../approval.js';
import type { CallHookDeps } from '../call-hooks.js';
import { checkedArgs, refused, type CallStage } from '../call-state.js';
import { fireOnCall } from './fire-hooks.js';

/**
 * The last gate: a call the tool, the policy's `approvals` or a hook says needs a person waits for
 * their answer (approval.ts); a refusal or no answer in time refuses it. Past here the call runs.
 */
export function approvalStage(deps: { rules: ApprovalRules | undefined; hooks: CallHookDeps; now: () => number }): CallStage {
  return (next) => async (call) => {
    const { request } = call;
    const tool = request.target.tool;
    const needs = approvalReason(call.tool, tool, deps.rules, call.hookAsks) ?? (call.verdict?.allowed ? call.verdict.approval : undefined);
    if (needs !== undefined) {
      const asked = deps.now();
      const timeoutMs = deps.rules?.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
      const answer = await waitForApproval(request.run?.approve, { callId: call.callId, tool, arguments: checkedArgs(call), reason: needs, timeoutMs }, request.run?.signal);
      call.approval = { approved: answer.approved, decided_by: answer.decidedBy, ...(answer.reason === undefined ? {} : { reason: answer.reason }), waited_ms: deps.now() - asked };
      const code = answer.approved ? 'granted' : answer.decidedBy === 'timeout' ? 'timeout' : 'denied';
      await fireOnCall(deps.hooks, call, 'approval', { code, detail: { decided_by: answer.decidedBy, reason: answer.reason ?? '' } });
      if (!answer.approved) return refused(call, answer.reason ?? `${answer.decidedBy} did not approve the call`, 'approval_denied');
    }
    call.cleared = true;
    return next(call);
  };
}
