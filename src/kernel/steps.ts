import type { SqlQueryable } from '../store/sql/sql-db.js';
import { appendEvents, type EventLinks } from './event-log.js';
import type { KernelEvent } from './types.js';

/** Steps (§11): a tool call of an execution, from pending to one of its final states. */

export const OPEN_STEP_STATUSES = ['pending', 'dispatched', 'running'] as const;
const FINAL = new Set(['succeeded', 'failed', 'timed_out', 'cancelled']);

export interface StepRow extends Record<string, unknown> {
  id: string;
  execution_id: string;
  tool_id: string;
  arguments: string;
  remote: boolean;
  /** The runner its current attempt was sent to (remote steps). */
  runner_id: string | null;
  /** For a step that asked for approval: the version of the kernel policy that asked. */
  policy_version: string | null;
  status: string;
  attempt: number;
  max_attempts: number;
  deadline: string;
  result: string | null;
  error: string | null;
  created_at: string;
  completed_at: string | null;
}

export const isFinalStep = (status: string): boolean => FINAL.has(status);

export async function openSteps(tx: SqlQueryable, executionId: string): Promise<StepRow[]> {
  return tx.query<StepRow>("select * from kernel_steps where execution_id = $1 and status in ('pending', 'dispatched', 'running') order by created_at, id", [executionId]);
}

export async function countSteps(tx: SqlQueryable, executionId: string): Promise<number> {
  const [row] = await tx.query<{ n: number | string }>('select count(*) as n from kernel_steps where execution_id = $1', [executionId]);
  return Number(row?.n ?? 0);
}

/** Every open step of the execution cancelled, with a `step.cancelled` each. */
export async function cancelOpenSteps(tx: SqlQueryable, executionId: string, reason: string, at: Date, links: EventLinks = {}): Promise<KernelEvent[]> {
  const open = await openSteps(tx, executionId);
  if (open.length === 0) return [];
  await tx.query("update kernel_steps set status = 'cancelled', error = $2, completed_at = $3 where execution_id = $1 and status in ('pending', 'dispatched', 'running')", [executionId, reason, at.toISOString()]);
  return appendEvents(tx, executionId, open.map((s) => ({ type: 'step.cancelled', stepId: s.id, payload: { reason } })), links, at);
}

/** §6.1: the execution's finished steps for `execution.assigned`, oldest first, the last 50 within 512 KiB. */
export async function stepHistory(tx: SqlQueryable, executionId: string): Promise<Record<string, unknown>[]> {
  const rows = await tx.query<StepRow>("select * from kernel_steps where execution_id = $1 and status in ('succeeded', 'failed', 'timed_out', 'cancelled') order by completed_at desc, id desc limit 50", [executionId]);
  const out: Record<string, unknown>[] = [];
  let size = 0;
  for (const s of rows) {
    const entry = {
      step_id: s.id,
      tool_id: s.tool_id,
      status: s.status,
      arguments: JSON.parse(s.arguments) as unknown,
      ...(s.result === null ? {} : { result: JSON.parse(s.result) as unknown }),
      ...(s.error === null ? {} : { error: s.error }),
      ...(s.completed_at === null ? {} : { completed_at: s.completed_at }),
    };
    size += JSON.stringify(entry).length;
    if (size > 512 * 1024) break;
    out.push(entry);
  }
  return out.reverse();
}
