import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import type { SqlDb, SqlQueryable, SqlValue } from './sql-db.js';

/**
 * Postgres embedded in the process (PGlite, WebAssembly), on disk under `dir`, or in memory when
 * `dir` is undefined (tests). It has one connection, so its transactions run one at a time: the
 * row locks that keep several gateways apart on a server cost nothing here.
 */
export async function openPgliteDb(dir: string | undefined): Promise<SqlDb> {
  if (dir !== undefined) await mkdir(dir, { recursive: true });
  const db = await PGlite.create(dir === undefined ? {} : { dataDir: dir });
  const queryable = (q: Pick<PGlite, 'query'>): SqlQueryable => ({
    async query<Row extends Record<string, unknown>>(sql: string, params: readonly SqlValue[] = []) {
      return (await q.query<Row>(sql, [...params])).rows;
    },
  });
  return {
    kind: 'pglite',
    ...queryable(db),
    transaction: (fn) => db.transaction((tx) => fn(queryable(tx))),
    async exec(sql) {
      await db.exec(sql);
    },
    close: () => db.close(),
  };
}
