import type { SqlQueryable } from '../store/sql/sql-db.js';
import { TERMINAL_STATUSES, type ExecutionStatus } from './types.js';

/**
 * How a step that waited for approval was answered, read from its execution's log: the approval
 * signal (§12.2) writes `step.dispatched` when granted and `step.failed` when denied, and the
 * `signal.received` before them carries who answered (`decided_by`, set by the route from the
 * client key). Undefined while it still waits.
 */
export interface ApprovalDecision {
  approved: boolean;
  decidedBy: string;
  reason?: string;
}

export async function approvalDecision(db: SqlQueryable, executionId: string, stepId: string): Promise<ApprovalDecision | undefined> {
  const events = await db.query<{ type: string; step_id: string | null; payload: string }>(
    "select type, step_id, payload from kernel_events where execution_id = $1 and (step_id = $2 or type = 'signal.received') and sequence > coalesce((select max(sequence) from kernel_events where execution_id = $1 and step_id = $2 and type = 'step.approval_required'), 0) order by sequence",
    [executionId, stepId],
  );
  let decidedBy = '';
  for (const event of events) {
    const payload = JSON.parse(event.payload) as Record<string, unknown>;
    if (event.type === 'signal.received') {
      const signal = payload['payload'] as Record<string, unknown> | null;
      if (payload['signal_type'] === 'step.approve' && signal?.['step_id'] === stepId && typeof signal['decided_by'] === 'string') decidedBy = signal['decided_by'];
      continue;
    }
    if (event.type === 'step.dispatched') return { approved: true, decidedBy: decidedBy || 'unknown' };
    if (event.type === 'step.failed') return { approved: false, decidedBy: decidedBy || 'unknown', reason: typeof payload['error'] === 'string' ? payload['error'] : 'approval denied' };
    if (event.type === 'step.cancelled') return { approved: false, decidedBy: 'cancelled', reason: 'the step was cancelled' };
  }
  const [row] = await db.query<{ status: ExecutionStatus }>('select status from kernel_executions where id = $1', [executionId]);
  if (row !== undefined && TERMINAL_STATUSES.has(row.status)) return { approved: false, decidedBy: row.status, reason: `the execution is ${row.status}` };
  return undefined;
}
