import type { SqlQueryable } from '../store/sql/sql-db.js';
import type { ExecutionStatus } from './types.js';

/** The execution row as the kernel's writers lock and change it. */

export interface ExecutionRow extends Record<string, unknown> {
  id: string;
  status: ExecutionStatus;
  agent_id: string;
  input: string;
  labels: string;
  output: string | null;
  /** What it used (budgets/usage-summary.ts), as JSON; null when it called no model. */
  usage: string | null;
  created_at: string;
  updated_at: string;
  /** Why it is blocked (§12): 'signal' or 'approval'; null when it is not. */
  block_reason: string | null;
  /** The signal type, or the step awaiting approval. */
  block_ref: string | null;
  /** 'api': created through /v0; 'chat': a request the gateway runs itself. */
  origin: 'api' | 'chat';
  /** For a chat: the kernel instance running it. */
  owner: string | null;
  /** The client of the key that made it. */
  client: string;
}

/** The row, locked until the transaction ends: all writes to one execution are serialised (§9). */
export async function lockExecution(tx: SqlQueryable, id: string): Promise<ExecutionRow | undefined> {
  const [row] = await tx.query<ExecutionRow>('select * from kernel_executions where id = $1 for update', [id]);
  return row;
}

/**
 * Any status but blocked (see blockExecution): the block is lifted, and a reset or an end clears
 * the signals still pending (§12.1).
 */
export async function setExecutionStatus(tx: SqlQueryable, id: string, status: Exclude<ExecutionStatus, 'blocked'>, at: Date, output?: string): Promise<void> {
  if (output === undefined) await tx.query('update kernel_executions set status = $2, updated_at = $3, block_reason = null, block_ref = null where id = $1', [id, status, at.toISOString()]);
  else await tx.query('update kernel_executions set status = $2, updated_at = $3, output = $4, block_reason = null, block_ref = null where id = $1', [id, status, at.toISOString(), output]);
  if (status !== 'running') await tx.query('delete from kernel_signals where execution_id = $1', [id]);
}

export async function blockExecution(tx: SqlQueryable, id: string, reason: 'signal' | 'approval', ref: string, at: Date): Promise<void> {
  await tx.query("update kernel_executions set status = 'blocked', updated_at = $2, block_reason = $3, block_ref = $4 where id = $1", [id, at.toISOString(), reason, ref]);
}
