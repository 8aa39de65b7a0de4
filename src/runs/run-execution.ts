import { KiwiError } from '../base/errors.js';
import type { ChatExecution, ChatJournal } from '../kernel/chat-journal.js';
import type { EventDraft } from '../kernel/types.js';
import { CHAT_AGENT_ID } from './chat-execution.js';

/**
 * The kernel execution of a run the gateway drives itself (a thread, a pipeline): begun in the
 * journal as the caller's, and a signal that fires when someone cancels it through the kernel.
 */
export function runExecution(journal: ChatJournal, start: { client: string; input: unknown; labels: Record<string, string>; what: string }): { execution: ChatExecution; signal: AbortSignal } {
  const controller = new AbortController();
  const execution = journal.begin({
    client: start.client,
    agentId: CHAT_AGENT_ID,
    input: start.input,
    labels: start.labels,
    onCancel() {
      controller.abort(new KiwiError('TOOL_CANCELLED', `${start.what} was cancelled through its execution ${execution.id}`));
    },
  });
  return { execution, signal: controller.signal };
}

/** The event that ends such a run's execution. */
export function runEndEvent(status: 'completed' | 'failed' | 'cancelled', ended: { output: unknown; error: string }): EventDraft {
  if (status === 'completed') return { type: 'execution.completed', payload: { output: ended.output } };
  return status === 'cancelled' ? { type: 'execution.cancelled', payload: { reason: ended.error } } : { type: 'execution.failed', payload: { error: ended.error } };
}
