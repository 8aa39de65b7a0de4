import type { SqlDb, SqlQueryable } from '../store/sql/sql-db.js';

/**
 * Which events a transaction wrote, told once it has committed: a rolled-back change is never
 * counted. The kernel's database is wrapped once (open-kernel.ts); the writers of the log
 * (event-log.ts, chat-rows.ts) note their events on the transaction they write in.
 */

/** A transaction that listens for the events written in it. */
interface EventNotingTx extends SqlQueryable {
  noteEvents(types: readonly string[]): void;
}

/** Tells `tx` which events were just written in it; a transaction nobody listens to ignores it. */
export function noteEvents(tx: SqlQueryable, types: readonly string[]): void {
  if (types.length > 0 && typeof (tx as Partial<EventNotingTx>).noteEvents === 'function') (tx as EventNotingTx).noteEvents(types);
}

export function watchCommittedEvents(db: SqlDb, onCommit: (types: readonly string[]) => void): SqlDb {
  return {
    kind: db.kind,
    query: (sql, params) => db.query(sql, params),
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
    async transaction(fn) {
      const written: string[] = [];
      const result = await db.transaction((tx) => {
        const noting: EventNotingTx = {
          query: (sql, params) => tx.query(sql, params),
          noteEvents(types) {
            for (const type of types) written.push(type);
          },
        };
        return fn(noting);
      });
      if (written.length > 0) onCommit(written);
      return result;
    },
  };
}
