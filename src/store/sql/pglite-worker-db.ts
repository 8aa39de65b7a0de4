import { Worker } from 'node:worker_threads';
import { KiwiError } from '../../base/errors.js';
import { pgliteWasm } from './pglite-wasm.js';
import type { SqlDb, SqlQueryable, SqlValue } from './sql-db.js';

/**
 * PGlite on a worker thread (pglite-thread.mjs), behind the same `SqlDb` as in-process. Postgres
 * in WebAssembly runs synchronously on its thread: in process, each of the journal's writes held
 * up every chat the gateway was streaming (PGlite was a fifth of a loaded gateway's CPU). Here
 * the main thread only sends the statements and waits; a transaction is a `begin`, its
 * statements and an `end`, and PGlite's own lock keeps others out until then, as in process.
 */

interface Reply {
  id: number;
  ok: boolean;
  rows?: Record<string, unknown>[];
  tx?: number;
  error?: { message: string; code?: string };
}

type Message = { op: 'query'; sql: string; params: SqlValue[]; tx?: number } | { op: 'exec'; sql: string } | { op: 'begin' } | { op: 'end'; tx: number; commit: boolean } | { op: 'close' };

const THREAD_URL = new URL('./pglite-thread.mjs', import.meta.url);

export async function openPgliteWorker(options: { dataDir?: string; initDbStartParams: string[]; startParams: string[] }): Promise<SqlDb> {
  const worker = new Worker(THREAD_URL, { workerData: { ...options, wasm: await pgliteWasm() } });
  const waiting = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>();
  let nextId = 1;
  let stopped: Error | undefined;

  const ready = new Promise<void>((resolve, reject) => {
    worker.once('message', (first: { ready: boolean; error?: Reply['error'] }) => (first.ready ? resolve() : reject(fromWorker(first.error))));
    worker.once('error', reject);
  });
  worker.on('message', (reply: Reply) => {
    const call = waiting.get(reply.id);
    if (call === undefined) return;
    waiting.delete(reply.id);
    if (reply.ok) call.resolve(reply);
    else call.reject(fromWorker(reply.error));
  });
  const fail = (error: Error): void => {
    stopped ??= error;
    for (const call of waiting.values()) call.reject(stopped);
    waiting.clear();
  };
  worker.on('error', (error) => fail(new KiwiError('INTERNAL', `the embedded kernel database's thread failed: ${error.message}`, { cause: error })));
  worker.on('exit', (code) => fail(new KiwiError('UNAVAILABLE', `the embedded kernel database's thread stopped (exit code ${code})`)));
  try {
    await ready;
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  // Idle, the thread must not keep the process alive; a call under way does.
  worker.unref();

  const send = (message: Message): Promise<Reply> => {
    if (stopped) return Promise.reject(stopped);
    const id = nextId++;
    if (waiting.size === 0) worker.ref();
    return new Promise<Reply>((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      worker.postMessage({ ...message, id });
    }).finally(() => {
      if (waiting.size === 0) worker.unref();
    });
  };
  const queryable = (tx?: number): SqlQueryable => ({
    async query<Row extends Record<string, unknown>>(sql: string, params: readonly SqlValue[] = []) {
      return ((await send({ op: 'query', sql, params: [...params], ...(tx === undefined ? {} : { tx }) })).rows ?? []) as Row[];
    },
  });

  return {
    kind: 'pglite',
    ...queryable(),
    async transaction(fn) {
      const { tx } = await send({ op: 'begin' });
      const id = tx as number;
      let result;
      try {
        result = await fn(queryable(id));
      } catch (error) {
        await send({ op: 'end', tx: id, commit: false }).catch(() => undefined);
        throw error;
      }
      await send({ op: 'end', tx: id, commit: true });
      return result;
    },
    async exec(sql) {
      await send({ op: 'exec', sql });
    },
    async close() {
      if (!stopped) await send({ op: 'close' }).catch(() => undefined);
      await worker.terminate();
    },
  };
}

/** The worker's error as an Error with its SQLSTATE, as the in-process PGlite throws it. */
function fromWorker(error: Reply['error']): Error {
  return Object.assign(new Error(error?.message ?? 'the embedded kernel database failed'), error ?? {});
}
