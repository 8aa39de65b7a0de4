import type { SqlQueryable, SqlValue } from '../store/sql/sql-db.js';
import { noteEvents } from './committed-events.js';
import type { ExecutionStatus } from './types.js';

/**
 * The gateway's chats written as executions (chat-journal.ts), many in one transaction: the rows
 * of new ones, the steps they opened or settled, their events, their end. A chat that an
 * operator cancelled meanwhile (here or from another gateway on the same database) is no longer
 * written to: its id is returned, so that the chat is stopped.
 */

/** A step of a chat: written when it opens, and again when it settles. */
export interface ChatStepWrite {
  id: string;
  toolId: string;
  /** JSON text. */
  arguments: string;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  deadline: string;
  createdAt: string;
  /** JSON text of the result, when it succeeded. */
  result?: string;
  error?: string;
  completedAt?: string;
}

/** An event with its id, time and links already given; the sequence is the log's. */
export interface ChatEventWrite {
  id: string;
  stepId?: string;
  type: string;
  timestamp: string;
  /** JSON text. */
  payload: string;
  causationId: string;
  correlationId: string;
}

export interface ChatWrite {
  id: string;
  /** Present the first time the chat is written. */
  create?: { agentId: string; input: string; labels: Record<string, string>; createdAt: string };
  events: ChatEventWrite[];
  steps: ChatStepWrite[];
  /** Its end, once it has one. */
  end?: { status: Extract<ExecutionStatus, 'completed' | 'failed' | 'cancelled'>; at: string; output?: string };
}

// Postgres takes at most 65,535 parameters in one statement.
const ROWS_PER_STATEMENT = 1000;

/** Returns the ids of chats that had ended in the database (cancelled) and were not written to. */
export async function writeChats(tx: SqlQueryable, writes: readonly ChatWrite[]): Promise<string[]> {
  const gone: string[] = [];
  const firstSequence = new Map<string, number>();
  const fresh = writes.filter((w) => w.create !== undefined);
  await insertRows(
    tx,
    'insert into kernel_executions (id, agent_id, status, input, labels, output, created_at, updated_at, last_sequence, origin) values',
    fresh.map((w) => {
      const c = w.create as NonNullable<ChatWrite['create']>;
      firstSequence.set(w.id, 1);
      return [w.id, c.agentId, w.end?.status ?? 'running', c.input, JSON.stringify(c.labels), w.end?.output ?? null, c.createdAt, w.end?.at ?? c.createdAt, w.events.length, 'chat'];
    }),
  );
  await insertRows(
    tx,
    'insert into kernel_execution_labels (execution_id, key, value) values',
    fresh.flatMap((w) => Object.entries(w.create?.labels ?? {}).map(([key, value]) => [w.id, key, value])),
  );
  for (const w of writes) {
    if (w.create !== undefined || (w.events.length === 0 && w.steps.length === 0 && w.end === undefined)) continue;
    // Only a running chat is written to: the lock this takes orders it after a cancel under way.
    const [row] = await tx.query<{ last_sequence: number }>(
      "update kernel_executions set last_sequence = last_sequence + $2, status = coalesce($3, status), output = coalesce($4, output), updated_at = coalesce($5, updated_at) where id = $1 and status = 'running' returning last_sequence",
      [w.id, w.events.length, w.end?.status ?? null, w.end?.output ?? null, w.end?.at ?? null],
    );
    if (row === undefined) gone.push(w.id);
    else firstSequence.set(w.id, row.last_sequence - w.events.length + 1);
  }
  const live = writes.filter((w) => firstSequence.has(w.id));
  const ended = live.filter((w) => w.end !== undefined).map((w) => w.id);
  if (ended.length > 0) await tx.query(`delete from kernel_signals where execution_id in (${ended.map((_, k) => `$${k + 1}`).join(', ')})`, ended);
  await insertRows(
    tx,
    `insert into kernel_steps (id, execution_id, tool_id, arguments, remote, status, attempt, max_attempts, deadline, result, error, created_at, completed_at) values`,
    live.flatMap((w) => w.steps.map((s) => [s.id, w.id, s.toolId, s.arguments, false, s.status, 1, 1, s.deadline, s.result ?? null, s.error ?? null, s.createdAt, s.completedAt ?? null])),
    // A step settles once: a cancel that got there first stays.
    "on conflict (id) do update set status = excluded.status, result = excluded.result, error = excluded.error, completed_at = excluded.completed_at where kernel_steps.status = 'running'",
  );
  await insertRows(
    tx,
    'insert into kernel_events (execution_id, sequence, id, step_id, type, timestamp, payload, causation_id, correlation_id) values',
    live.flatMap((w) => {
      const first = firstSequence.get(w.id) as number;
      return w.events.map((e, i) => [w.id, first + i, e.id, e.stepId ?? null, e.type, e.timestamp, e.payload, e.causationId, e.correlationId]);
    }),
  );
  noteEvents(tx, live.flatMap((w) => w.events.map((e) => e.type)));
  return gone;
}

async function insertRows(tx: SqlQueryable, head: string, rows: SqlValue[][], tail = ''): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const values: SqlValue[] = [];
    const tuples = rows.slice(start, start + ROWS_PER_STATEMENT).map((row) => {
      const at = values.length;
      values.push(...row);
      return `(${row.map((_, k) => `$${at + k + 1}`).join(', ')})`;
    });
    await tx.query(`${head} ${tuples.join(', ')} ${tail}`, values);
  }
}
