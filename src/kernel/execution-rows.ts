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
  created_at: string;
  updated_at: string;
}

/** The row, locked until the transaction ends: all writes to one execution are serialised (§9). */
export async function lockExecution(tx: SqlQueryable, id: string): Promise<ExecutionRow | undefined> {
  const [row] = await tx.query<ExecutionRow>('select * from kernel_executions where id = $1 for update', [id]);
  return row;
}

export async function setExecutionStatus(tx: SqlQueryable, id: string, status: ExecutionStatus, at: Date, output?: string): Promise<void> {
  if (output === undefined) await tx.query('update kernel_executions set status = $2, updated_at = $3 where id = $1', [id, status, at.toISOString()]);
  else await tx.query('update kernel_executions set status = $2, updated_at = $3, output = $4 where id = $1', [id, status, at.toISOString(), output]);
}
