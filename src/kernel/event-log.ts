import { KiwiError } from '../errors.js';
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
  // Taking the numbers locks the execution's row until the transaction ends (if it was not locked already).
  const [row] = await tx.query<{ last_sequence: number }>('update kernel_executions set last_sequence = last_sequence + $2 where id = $1 returning last_sequence', [executionId, drafts.length]);
  if (row === undefined) throw new KiwiError('NOT_FOUND', `not found: execution ${executionId}`);
  const first = row.last_sequence - drafts.length + 1;
  const timestamp = now.toISOString();
  const events: KernelEvent[] = [];
  let previous: string | undefined;
  for (const [i, draft] of drafts.entries()) {
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
      sequence: first + i,
    });
    previous = id;
  }
  // One statement for the whole batch.
  const values: SqlValue[] = [];
  const rows = events.map((e) => {
    const at = values.length;
    values.push(e.executionId, e.sequence, e.id, e.stepId ?? null, e.type, e.timestamp, JSON.stringify(e.payload), e.causationId, e.correlationId);
    return `(${Array.from({ length: 9 }, (_, k) => `$${at + k + 1}`).join(', ')})`;
  });
  await tx.query(`insert into kernel_events (execution_id, sequence, id, step_id, type, timestamp, payload, causation_id, correlation_id) values ${rows.join(', ')}`, values);
  noteEvents(tx, drafts.map((d) => d.type));
  return events;
}

/** Events with a sequence above `afterSequence`, oldest first, at most `limit`. */
export async function readEvents(db: SqlQueryable, executionId: string, afterSequence: number, limit: number): Promise<KernelEvent[]> {
  const rows = await db.query<EventRow>('select * from kernel_events where execution_id = $1 and sequence > $2 order by sequence limit $3', [executionId, afterSequence, limit]);
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
