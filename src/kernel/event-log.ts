import { KiwiError } from '../base/errors.js';
import { noteEvents } from './committed-events.js';
import type { SqlQueryable, SqlValue } from '../store/sql/sql-db.js';
import type { EventDraft, KernelEvent } from './types.js';
import { uuidv7 } from './uuidv7.js';

/**
 * An execution's event log (§14): append-only, numbered from 1 without gaps. Events written
 * together share a time and a correlation id, each caused by the one before it. Append inside
 * the transaction that makes the change they tell of, so the log and the state never disagree.
 */

export interface EventLinks {
  /** The event that caused the first of these (default: the first itself). */
  causationId?: string;
  /** The story they belong to (default: the first event's id). */
  correlationId?: string;
}

interface EventRow extends Record<string, unknown> {
  execution_id: string;
  sequence: number;
  id: string;
  step_id: string | null;
  type: string;
  timestamp: string;
  payload: string;
  causation_id: string;
  correlation_id: string;
}

export async function appendEvents(tx: SqlQueryable, executionId: string, drafts: readonly EventDraft[], links: EventLinks = {}, now: Date = new Date()): Promise<KernelEvent[]> {
  if (drafts.length === 0) return [];
  const timestamp = now.toISOString();
  const events: Omit<KernelEvent, 'sequence'>[] = [];
  let previous: string | undefined;
  for (const draft of drafts) {
    const id = uuidv7(now.getTime());
    events.push({
      id,
      executionId,
      ...(draft.stepId === undefined ? {} : { stepId: draft.stepId }),
      type: draft.type,
      schemaVersion: 1,
      timestamp,
      payload: draft.payload,
      causationId: previous ?? links.causationId ?? id,
      correlationId: links.correlationId ?? events[0]?.id ?? id,
      idempotencyKey: '',
    });
    previous = id;
  }
  // One statement takes the numbers and writes the batch: the update locks the execution's row
  // until the transaction ends (if it was not locked already), and numbers the rows from it.
  const values: SqlValue[] = [executionId, drafts.length, timestamp];
  const rows = events.map((e, i) => {
    const at = values.length;
    values.push(i + 1, e.id, e.stepId ?? null, e.type, JSON.stringify(e.payload), e.causationId, e.correlationId);
    return `($${at + 1}::integer, ${Array.from({ length: 6 }, (_, k) => `$${at + k + 2}`).join(', ')})`;
  });
  const written = await tx.query<{ sequence: number }>(
    `with numbered as (update kernel_executions set last_sequence = last_sequence + $2 where id = $1 returning last_sequence)
     insert into kernel_events (execution_id, sequence, id, step_id, type, timestamp, payload, causation_id, correlation_id)
     select $1, numbered.last_sequence - $2 + v.i, v.id, v.step_id, v.type, $3, v.payload, v.causation_id, v.correlation_id
     from numbered, (values ${rows.join(', ')}) as v(i, id, step_id, type, payload, causation_id, correlation_id)
     returning sequence`,
    values,
  );
  if (written.length !== events.length) throw new KiwiError('NOT_FOUND', `not found: execution ${executionId}`);
  const first = Math.min(...written.map((r) => r.sequence));
  noteEvents(tx, executionId, drafts.map((d) => d.type));
  return events.map((e, i) => ({ ...e, sequence: first + i }));
}

/**
 * Events with a sequence above `afterSequence`, oldest first, at most `limit`: the log's rows and,
 * for a chat written whole (chat-rows.ts), the events folded into its execution's row, read as
 * rows here and nowhere else.
 */
export async function readEvents(db: SqlQueryable, executionId: string, afterSequence: number, limit: number): Promise<KernelEvent[]> {
  const rows = await db.query<EventRow>(
    `select * from (
       select execution_id, sequence, id, step_id, type, timestamp, payload, causation_id, correlation_id from kernel_events where execution_id = $1 and sequence > $2
       union all
       select e.id, f.sequence, f.id, f.step_id, f.type, f.timestamp, f.payload, f.causation_id, f.correlation_id
       from kernel_executions e, json_to_recordset(e.folded_events::json) as f(sequence integer, id text, step_id text, type text, timestamp text, payload text, causation_id text, correlation_id text)
       where e.id = $1 and e.folded_events is not null and f.sequence > $2
     ) events order by sequence limit $3`,
    [executionId, afterSequence, limit],
  );
  return rows.map(fromRow);
}

function fromRow(r: EventRow): KernelEvent {
  return {
    id: r.id,
    executionId: r.execution_id,
    ...(r.step_id === null ? {} : { stepId: r.step_id }),
    type: r.type,
    schemaVersion: 1,
    timestamp: r.timestamp,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    causationId: r.causation_id,
    correlationId: r.correlation_id,
    idempotencyKey: '',
    sequence: r.sequence,
  };
}
