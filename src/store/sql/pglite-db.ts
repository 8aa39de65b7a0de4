import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { waitForLock } from '../wait-lock.js';
import { lockDir } from './dir-lock.js';
import { openPgliteWorker } from './pglite-worker-db.js';
import { pgliteWasm } from './pglite-wasm.js';
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
 * keeps its own): 10 MB less on disk for a new kernel database, and the kernel's
 * transactions are small, so the log is recycled in small steps.
 */
const INITDB_PARAMS = ['--wal-segsize=1'];

/**
 * initdb makes three databases; the kernel uses `postgres` and nothing ever creates another
 * from a template. Dropping template0 and template1 when the database is made takes 600 of its
 * 1,038 files and 14 of its 29 MB: less to copy, back up or ship with a project.
 */
const DROP_TEMPLATES = [
  "update pg_database set datistemplate = false, datallowconn = false where datname in ('template0', 'template1')",
  'drop database template0',
  'drop database template1',
  'checkpoint',
];

/**
 * Postgres embedded in the process (PGlite, WebAssembly), on disk under `dir`, or in memory when
 * `dir` is undefined (tests). It has one connection, so its transactions run one at a time: the
 * row locks that keep several gateways apart on a server cost nothing here. With `thread`, it
 * runs on a worker thread of its own (pglite-worker-db.ts), off the thread that serves requests.
 * With `wait`, a database another process holds is waited for (its holders open it briefly, as
 * the registry tier's do) instead of refused (a gateway's kernel, held while it runs).
 */
export async function openPgliteDb(dir: string | undefined, options: { thread?: boolean; wait?: LockWait } = {}): Promise<SqlDb> {
  let unlock = async (): Promise<void> => undefined;
  if (dir !== undefined) {
    await mkdir(dir, { recursive: true });
    unlock = options.wait === undefined ? await lockDir(`${dir}.lock`, `the embedded kernel database ${dir}`) : await waitForLock(`${dir}.lock`, options.wait);
  }
  let db: SqlDb | undefined;
  const fresh = dir !== undefined && !existsSync(path.join(dir, 'PG_VERSION'));
  try {
    const settings = { ...(dir === undefined ? {} : { dataDir: dir }), initDbStartParams: INITDB_PARAMS, startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${SHARED_BUFFERS}`] };
    if (options.thread === true) db = await openPgliteWorker(settings);
    else db = inProcess(await PGlite.create({ ...settings, ...((await pgliteWasm()) as Pick<PGliteOptions, 'pgliteWasmModule' | 'initdbWasmModule'>) }));
    // One statement at a time: DROP DATABASE refuses to run inside a transaction.
    if (fresh) for (const sql of DROP_TEMPLATES) await db.exec(sql);
  } catch (error) {
    await db?.close();
    await unlock();
    throw error;
  }
  const opened = db;
  return {
    ...opened,
    async close() {
      await opened.close();
      await unlock();
    },
  };
}

export interface LockWait {
  /** Ends the wait: its reason is what the open throws. */
  signal: AbortSignal;
  /** Told once, when another process holds the database. */
  onWait?: (owner: number) => void;
}

function inProcess(db: PGlite): SqlDb {
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
