import type { SqlQueryable } from '../store/sql/sql-db.js';

/**
 * The tool calls that wait for a person (§12.2), across every client: each blocked execution
 * whose block is an approval, with the step it waits on. One query over the blocked rows, so an
 * approval queue is as cheap to look at as the queue is long.
 */
export interface WaitingApproval {
  executionId: string;
  /** The client whose execution it is. */
  client: string;
  agentId: string;
  stepId: string;
  toolId: string;
  arguments: unknown;
  /** When the call was asked for. */
  since: string;
  /** When the step stops waiting (its deadline): the approval expires then. */
  expires: string;
}

interface Row extends Record<string, unknown> {
  execution_id: string;
  client: string;
  agent_id: string;
  step_id: string;
  tool_id: string;
  arguments: string;
  created_at: string;
  deadline: string;
}

const SELECT = `select e.id as execution_id, e.client, e.agent_id, s.id as step_id, s.tool_id, s.arguments, s.created_at, s.deadline
  from kernel_executions e join kernel_steps s on s.id = e.block_ref and s.execution_id = e.id
  where e.status = 'blocked' and e.block_reason = 'approval'`;

/** The oldest first, at most `limit`. */
export async function waitingApprovals(db: SqlQueryable, limit: number): Promise<WaitingApproval[]> {
  const rows = await db.query<Row>(`${SELECT} order by s.created_at, s.id limit $1`, [limit]);
  return rows.map(fromRow);
}

/** The approval step `stepId` waits for; undefined when it waits for none (answered, expired, never asked). */
export async function waitingApproval(db: SqlQueryable, stepId: string): Promise<WaitingApproval | undefined> {
  const [row] = await db.query<Row>(`${SELECT} and s.id = $1`, [stepId]);
  return row === undefined ? undefined : fromRow(row);
}

function fromRow(r: Row): WaitingApproval {
  return { executionId: r.execution_id, client: r.client, agentId: r.agent_id, stepId: r.step_id, toolId: r.tool_id, arguments: JSON.parse(r.arguments) as unknown, since: r.created_at, expires: r.deadline };
}
