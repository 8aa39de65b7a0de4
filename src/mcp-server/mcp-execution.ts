import { KiwiError } from '../base/errors.js';
import type { ChatJournal } from '../kernel/chat-journal.js';
import { EXECUTION_ID_META } from './meta-common.js';
import type { MetaRecorder } from './meta-server.js';
import type { CallOutcome, ToolCall } from '../proxy/tool-call.js';
import { keep } from '../runs/chat-execution.js';
import type { Budgets } from '../budgets/budget-meter.js';
import { waitingText, type ChatApprovalDeps } from '../runs/chat-approvals.js';
import { openRunScope } from '../runs/run-scope.js';

/**
 * Each MCP `execute` and `resolve` on the gateway's /mcp as a kernel execution, like a chat: its
 * arguments as the input, each tool call it makes as a step, the result's text as the output.
 * The result's `_meta` names the execution; cancelling it stops the call (the meta-tool then
 * answers with an error saying so). A call that needs a person's approval waits on its step
 * (chat-approvals.ts), the client told how to answer. The run's scope (runs/run-scope.ts) opens
 * all of it; what is the MCP call's own is its input, its output and how its end is told.
 */
export function mcpRecorder(
  journal: ChatJournal,
  options: { call: (call: ToolCall) => Promise<CallOutcome>; stepDeadlineMs: number; kernel: ChatApprovalDeps['kernel']; events?: ChatApprovalDeps['events']; budgets?: Pick<Budgets, 'admit'> },
): MetaRecorder {
  return async (request, run) => {
    // The client's budget counts its MCP tool calls too; one that is spent is refused before anything runs.
    const meter = await options.budgets?.admit({ client: request.caller.client, model: 'mcp', free: true });
    const scope = openRunScope(
      { journal, kernel: options.kernel, ...(options.events ? { events: options.events } : {}) },
      {
        client: request.caller.client,
        input: { tool: request.tool, arguments: request.arguments },
        labels: { kind: 'mcp', client: request.caller.client, tool: request.tool },
        stepDeadlineMs: options.stepDeadlineMs,
        signal: request.signal,
        ...(meter ? { meter } : {}),
      },
    );
    const { execution, steps } = scope.recorded;
    try {
      const result = await run(
        // The proxy's budget stage counts the call on the client's budget.
        (call, details) =>
          scope.call({ ...call, run: { ...call.run, signal: scope.signal, ...(meter ? { budget: meter } : {}) } }, details, options.call, (ask, step) =>
            request.waiting({ executionId: execution.id, stepId: step, message: waitingText(ask.reason, step, ask.timeoutMs) }),
          ),
        scope.signal,
      );
      if (scope.cancelled()) throw new KiwiError('TOOL_CANCELLED', `The execution ${execution.id} was cancelled; its running tool was stopped.`);
      const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
      // The output on the execution too: a round of an approval wait on another replica answers with it (execution-outcome.ts).
      const output = { is_error: result.isError === true, text: keep(text) };
      execution.end('completed', [...steps.cancelOpen(), { type: 'execution.completed', payload: { output } }], { output });
      return execution.recorded ? { ...result, _meta: { ...result._meta, [EXECUTION_ID_META]: execution.id } } : result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      execution.end(request.signal.aborted ? 'cancelled' : 'failed', [
        ...steps.cancelOpen(),
        request.signal.aborted ? { type: 'execution.cancelled', payload: { reason: 'client disconnected' } } : { type: 'execution.failed', payload: { error: message } },
      ]);
      throw error;
    } finally {
      await scope.release();
    }
  };
}
