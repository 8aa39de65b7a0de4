import { ownedBy } from '../clients/access.js';
import { lookEveryMs, watchExecution, type KernelEventsBus } from '../contracts/kernel-events-bus.js';
import { isKiwiError } from '../base/errors.js';
import type { Kernel } from '../kernel/open-kernel.js';
import { TERMINAL_STATUSES, type Execution } from '../kernel/types.js';
import type { ExecutionOutcome } from './approval-waits.js';
import { errorResult, EXECUTION_ID_META, type MetaResult } from './meta-common.js';

/**
 * How a recorded MCP call stands, from the kernel's record: for a round of an approval wait that
 * reaches a replica other than the one running the call (approval-waits.ts). It waits for the
 * execution's events (over Redis when replicas share them) up to the round's time. The result is
 * what the kernel kept: the call's text (cut at the kernel's bound) and whether it was an error,
 * without the structured content the running replica would have given.
 */
export function kernelOutcome(deps: { kernel(): Promise<Pick<Kernel, 'executions'>>; events?: KernelEventsBus }): ExecutionOutcome {
  return async (id, caller, waitMs, signal) => {
    const watch = watchExecution(deps.events, id);
    const deadline = performance.now() + waitMs;
    try {
      for (;;) {
        let execution: Execution;
        try {
          execution = await (await deps.kernel()).executions.get(id);
        } catch (error) {
          if (isKiwiError(error, 'NOT_FOUND')) return undefined;
          throw error;
        }
        // Only its own client follows a call; another client's is answered like an unknown one.
        if (!ownedBy(caller, execution.client) || execution.labels['kind'] !== 'mcp') return undefined;
        if (TERMINAL_STATUSES.has(execution.status)) return { status: 'ended', result: recordedResult(execution) };
        const left = deadline - performance.now();
        if (left <= 0) return { status: 'running' };
        await watch.wait(Math.min(left, lookEveryMs(deps.events, 1_000)), signal);
      }
    } finally {
      watch.close();
    }
  };
}

function recordedResult(execution: Execution): MetaResult {
  const meta = { [EXECUTION_ID_META]: execution.id };
  if (execution.status === 'cancelled') return { ...errorResult('TOOL_CANCELLED', `The execution ${execution.id} was cancelled; its running tool was stopped.`), _meta: meta };
  const output = execution.output as { is_error?: unknown; text?: unknown } | undefined;
  if (execution.status === 'failed' || typeof output?.text !== 'string') {
    return { ...errorResult('TOOL_FAILED', `The execution ${execution.id} ended ${execution.status} without a result; GET /v0/executions/${execution.id}/events says why.`), _meta: meta };
  }
  return { content: [{ type: 'text', text: output.text }], ...(output.is_error === true ? { isError: true } : {}), _meta: meta };
}
