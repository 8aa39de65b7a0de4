import { KiwiError } from '../base/errors.js';
import type { ChatJournal } from '../kernel/chat-journal.js';
import type { ThreadJournal, ThreadRun } from '../threads/run-thread.js';
import type { ChatApprovalDeps } from './chat-approvals.js';
import { keep } from './chat-execution.js';
import { openRunScope, runEndEvent } from './run-scope.js';

/**
 * Each run of a thread as a kernel execution, like a chat: the directive and its inputs as the
 * input, each call as a step, the result as the output. So a call that needs a person waits on
 * its step (`kiwi approvals grant|deny STEP`) as a chat's does, and cancelling the execution
 * through the kernel cancels the thread.
 */
export function threadJournal(journal: ChatJournal, options: { kernel: ChatApprovalDeps['kernel']; events?: ChatApprovalDeps['events'] }): (run: ThreadRun) => ThreadJournal {
  return (run) => {
    const scope = openRunScope(
      { journal, ...options },
      {
        client: run.client,
        input: { directive: run.directive, inputs: run.inputs },
        labels: { kind: 'thread', client: run.client, directive: run.directive, thread: run.id },
        stepDeadlineMs: run.maxDurationMs,
        cancelReason: (id) => new KiwiError('TOOL_CANCELLED', `thread ${run.id} was cancelled through its execution ${id}`),
      },
    );
    const { execution, steps } = scope.recorded;
    return {
      signal: scope.signal,
      call: (call, through, onWaiting) => scope.call(call, { thread: run.id }, through, (ask, stepId) => onWaiting({ stepId, reason: ask.reason, timeoutMs: ask.timeoutMs })),
      written: () => execution.written(),
      end(outcome) {
        const output = { thread: outcome.id, status: outcome.status, result: keep(outcome.result) };
        const status = outcome.status === 'completed' ? 'completed' : outcome.status === 'cancelled' ? 'cancelled' : 'failed';
        execution.end(status, [...steps.cancelOpen(), runEndEvent(status, { output, error: outcome.error ?? (status === 'cancelled' ? 'cancelled' : outcome.status) })], { usage: outcome.usage });
      },
    };
  };
}
