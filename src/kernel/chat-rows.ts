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
  create?: { client: string; agentId: string; input: string; labels: Record<string, string>; createdAt: string };
  events: ChatEventWrite[];
  steps: ChatStepWrite[];
  /** The step it now waits on for a person's approval (§12.2): the row is blocked on it. */
  block?: string;
  /** Its end, once it has one. */
  end?: { status: Extract<ExecutionStatus, 'completed' | 'failed' | 'cancelled'>; at: string; output?: string; usage?: string };
}

/** `owner`: the kernel instance running them. Returns the ids of chats that had ended in the database (cancelled) and were not written to. */
export async function writeChats(tx: SqlQueryable, writes: readonly ChatWrite[], owner: string): Promise<string[]> {
  const firstSequence = new Map<string, number>();
  const fresh = writes.filter((w) => w.create !== undefined);
  for (const w of fresh) firstSequence.set(w.id, 1);
  const known = writes.filter((w) => w.create === undefined && (w.events.length > 0 || w.steps.length > 0 || w.end !== undefined || w.block !== undefined));
  if (known.length > 0) {
    // Only a chat not ended is written to: the row locks this takes order it after a cancel under
    // way. An end lifts a block; a block waits for the approval signal, which lifts it (signals.ts).
    const rows = await tx.query<{ id: string; last_sequence: number }>(
      `update kernel_executions e set last_sequence = e.last_sequence + x.n,
         status = coalesce(x.status, case when x.block_ref is not null then 'blocked' else e.status end),
         block_reason = case when x.status is not null then null when x.block_ref is not null then 'approval' else e.block_reason end,
         block_ref = case when x.status is not null then null else coalesce(x.block_ref, e.block_ref) end,
         output = coalesce(x.output, e.output), usage = coalesce(x.usage, e.usage), updated_at = coalesce(x.updated_at, e.updated_at)
       from json_to_recordset($1::json) as x(id text, n integer, status text, output text, usage text, updated_at text, block_ref text)
       where e.id = x.id and e.status in ('running', 'blocked') returning e.id, e.last_sequence`,
      [JSON.stringify(known.map((w) => ({ id: w.id, n: w.events.length, status: w.end?.status ?? null, output: w.end?.output ?? null, usage: w.end?.usage ?? null, updated_at: w.end?.at ?? null, block_ref: w.end === undefined ? (w.block ?? null) : null })))],
    );
    const counts = new Map(known.map((w) => [w.id, w.events.length]));
    for (const row of rows) firstSequence.set(row.id, row.last_sequence - (counts.get(row.id) ?? 0) + 1);
  }
  const gone = known.filter((w) => !firstSequence.has(w.id)).map((w) => w.id);
  const live = writes.filter((w) => firstSequence.has(w.id));
  // A chat new in this batch that has ended, with no step or block, is one row: its events folded
  // into it (read back by event-log.ts as if they were rows of the log), its labels read from its
  // own column by the list's filter: one row instead of one more for each label and each event.
  const folded = new Set(fresh.filter(foldable).map((w) => w.id));
  // Only a chat written before can have signals waiting: one new in this batch was never seen by anyone.
  const ended = live.filter((w) => w.end !== undefined && w.create === undefined).map((w) => w.id);
  if (ended.length > 0) await tx.query('delete from kernel_signals where execution_id in (select value from json_array_elements_text($1::json))', [JSON.stringify(ended)]);
  // Every row in one statement: a statement costs PGlite far more than a row does.
  await insertJson(tx, [
    {
      table: 'kernel_executions',
      columns: ['id', 'agent_id', 'status', 'input', 'labels', 'output', 'usage', 'created_at', 'updated_at', 'last_sequence', 'origin', 'owner', 'block_reason', 'block_ref', 'client', 'folded_events'],
      rows: fresh.map((w) => {
        const c = w.create as NonNullable<ChatWrite['create']>;
        const blocked = w.end === undefined && w.block !== undefined;
        const events = folded.has(w.id) ? foldedEvents(w.events) : null;
        return [w.id, c.agentId, w.end?.status ?? (blocked ? 'blocked' : 'running'), c.input, JSON.stringify(c.labels), w.end?.output ?? null, w.end?.usage ?? null, c.createdAt, w.end?.at ?? c.createdAt, w.events.length, 'chat', owner, blocked ? 'approval' : null, blocked ? (w.block as string) : null, c.client, events];
      }),
    },
    {
      table: 'kernel_execution_labels',
      columns: ['execution_id', 'key', 'value'],
      rows: fresh.filter((w) => !folded.has(w.id)).flatMap((w) => Object.entries(w.create?.labels ?? {}).map(([key, value]) => [w.id, key, value])),
    },
    {
      table: 'kernel_steps',
      columns: ['id', 'execution_id', 'tool_id', 'arguments', 'remote', 'status', 'attempt', 'max_attempts', 'deadline', 'result', 'error', 'created_at', 'completed_at'],
      rows: live.flatMap((w) => w.steps.map((s) => [s.id, w.id, s.toolId, s.arguments, false, s.status, 1, 1, s.deadline, s.result ?? null, s.error ?? null, s.createdAt, s.completedAt ?? null])),
      // A step settles once: a cancel that got there first stays.
      tail: "on conflict (id) do update set status = excluded.status, result = excluded.result, error = excluded.error, completed_at = excluded.completed_at where kernel_steps.status = 'running'",
    },
    {
      table: 'kernel_events',
      columns: ['execution_id', 'sequence', 'id', 'step_id', 'type', 'timestamp', 'payload', 'causation_id', 'correlation_id'],
      rows: live.filter((w) => !folded.has(w.id)).flatMap((w) => {
        const first = firstSequence.get(w.id) as number;
        return w.events.map((e, i) => [w.id, first + i, e.id, e.stepId ?? null, e.type, e.timestamp, e.payload, e.causationId, e.correlationId]);
      }),
    },
  ]);
  for (const w of live) noteEvents(tx, w.id, w.events.map((e) => e.type));
  return gone;
}

/** Whether a write is a whole chat that needs no row of the log's, the steps' or the labels' tables. */
function foldable(w: ChatWrite): boolean {
  return w.create !== undefined && w.end !== undefined && w.steps.length === 0 && w.block === undefined;
}

/** A folded chat's events, numbered from 1: its `folded_events` column, which readEvents (event-log.ts) reads as rows. */
function foldedEvents(events: readonly ChatEventWrite[]): string {
  return JSON.stringify(events.map((e, i) => ({ sequence: i + 1, id: e.id, step_id: e.stepId ?? null, type: e.type, timestamp: e.timestamp, payload: e.payload, causation_id: e.causationId, correlation_id: e.correlationId })));
}

interface TableRows {
  table: string;
  columns: readonly string[];
  rows: readonly SqlValue[][];
  tail?: string;
}

/**
 * The rows of each table given as one JSON parameter, read back with the table's own row type,
 * all tables in one statement (each insert a part of its WITH; the foreign keys are checked at
 * its end, when every part has run): one statement and one parameter a table however many rows
 * (binding each value, or a statement each, costs far more, in PGlite most of all).
 */
async function insertJson(tx: SqlQueryable, tables: readonly TableRows[]): Promise<void> {
  const parts = tables.filter((t) => t.rows.length > 0);
  if (parts.length === 0) return;
  const inserts = parts.map(({ table, columns, tail }, i) => {
    const list = columns.join(', ');
    return `insert into ${table} (${list}) select ${list} from json_populate_recordset(null::${table}, $${i + 1}::json) ${tail ?? ''}`;
  });
  const params = parts.map(({ columns, rows }) => JSON.stringify(rows.map((row) => Object.fromEntries(columns.map((c, i) => [c, row[i] ?? null])))));
  const [only] = inserts;
  await tx.query(inserts.length === 1 && only !== undefined ? only : `with ${inserts.map((sql, i) => `w${i} as (${sql})`).join(', ')} select 1`, params);
}
