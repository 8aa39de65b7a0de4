import type { ApprovalAnswer, ApprovalAsk } from '../proxy/approval.js';
import type { CallOutcome, ToolCall } from '../proxy/tool-call.js';
import type { ChatApprovals } from './chat-approvals.js';
import { outcomeText, type ExecutionSteps } from './execution-steps.js';

/**
 * One call of an execution the gateway runs for an MCP client or a thread: its step opened, a
 * person asked on that step when the call needs one (`announce` tells the caller where to answer),
 * and the step settled with the outcome.
 */
export async function recordedCall(
  parts: { steps: ExecutionSteps; approvals: Pick<ChatApprovals, 'approveStep'> },
  call: ToolCall,
  details: Record<string, unknown>,
  through: (call: ToolCall) => Promise<CallOutcome>,
  announce: (ask: ApprovalAsk, stepId: string) => void,
): Promise<CallOutcome> {
  const step = parts.steps.open({ tool: call.target.tool, arguments: call.target.args }, details);
  const approve = (ask: ApprovalAsk): Promise<ApprovalAnswer> => parts.approvals.approveStep(step, ask, () => announce(ask, step));
  const outcome = await through({ ...call, run: { ...call.run, approve } });
  parts.steps.settle(step, outcome.status === 'ok' && outcome.result.isError ? 'error' : outcome.status, outcomeText(outcome), outcome.callId);
  return outcome;
}
