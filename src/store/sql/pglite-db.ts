import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { lockDir } from './dir-lock.js';
import type { SqlDb, SqlQueryable, SqlValue } from './sql-db.js';

/**
 * Postgres's default buffer pool (128 MB) is sized for a server. PGlite zeroes it in WebAssembly
 * memory at every start (~5 ms a MB here) and keeps it resident; one connection over a kernel's
 * small tables needs far less, and the operating system caches the files below it anyway.
 * 16 MB opens in ~0.3 s instead of ~0.85 s and grows the process by 108 MB instead of 226 MB;
 * `npm run bench -- kernel` measured the same rates.
 */
const SHARED_BUFFERS = '16MB';

/**
 * WAL files of 1 MB instead of initdb's 16 MB (set when the database is made; an existing one
 * keeps its own): a new kernel database takes 29 MB on disk instead of 39, and the kernel's
 * transactions are small, so the log is recycled in small steps.
 */
const INITDB_PARAMS = ['--wal-segsize=1'];

/**
 * Postgres embedded in the process (PGlite, WebAssembly), on disk under `dir`, or in memory when
 * `dir` is undefined (tests). It has one connection, so its transactions run one at a time: the
 * row locks that keep several gateways apart on a server cost nothing here.
 */
export async function openPgliteDb(dir: string | undefined): Promise<SqlDb> {
  let unlock = async (): Promise<void> => undefined;
  if (dir !== undefined) {
    await mkdir(dir, { recursive: true });
    unlock = await lockDir(`${dir}.lock`, `the embedded kernel database ${dir}`);
  }
  let db: PGlite;
  try {
    db = await PGlite.create({ ...(dir === undefined ? {} : { dataDir: dir }), initDbStartParams: INITDB_PARAMS, startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${SHARED_BUFFERS}`] });
  } catch (error) {
    await unlock();
    throw error;
  }
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
    async close() {
      await db.close();
      await unlock();
    },
  };
}
