import type { CommittedEvents } from '../contracts/kernel-events-bus.js';
import type { SqlDb, SqlQueryable } from '../store/sql/sql-db.js';

/**
 * Which events a transaction wrote, told once it has committed: a rolled-back change is never
 * counted. The kernel's database is wrapped once (open-kernel.ts); the writers of the log
 * (event-log.ts, chat-rows.ts) note their events on the transaction they write in.
 */

/** A transaction that listens for the events written in it. */
interface EventNotingTx extends SqlQueryable {
  noteEvents(execution: string, types: readonly string[]): void;
}

/** Tells `tx` which events of `execution` were just written in it; a transaction nobody listens to ignores it. */
export function noteEvents(tx: SqlQueryable, execution: string, types: readonly string[]): void {
  if (types.length > 0 && typeof (tx as Partial<EventNotingTx>).noteEvents === 'function') (tx as EventNotingTx).noteEvents(execution, types);
}

export function watchCommittedEvents(db: SqlDb, onCommit: (notes: readonly CommittedEvents[]) => void): SqlDb {
  return {
    kind: db.kind,
    query: (sql, params) => db.query(sql, params),
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
    async transaction(fn) {
      const written: CommittedEvents[] = [];
      const result = await db.transaction((tx) => {
        const noting: EventNotingTx = {
          query: (sql, params) => tx.query(sql, params),
          noteEvents(execution, types) {
            written.push({ execution, types });
          },
        };
        return fn(noting);
      });
      if (written.length > 0) onCommit(written);
      return result;
    },
  };
}
