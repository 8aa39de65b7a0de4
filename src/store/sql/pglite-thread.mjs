// PGlite on a worker thread of its own (pglite-worker-db.ts), in plain JavaScript so that the
// same file runs under vitest (from src/) and from the compiled dist/ (the build copies it).
// Postgres in WebAssembly computes synchronously on the thread that calls it: a kernel write
// there stops every request the gateway is serving until it returns.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

// wasm: PGlite's WebAssembly, compiled once by the process (pglite-wasm.ts), where it could.
const { dataDir, initDbStartParams, startParams, wasm } = workerData;

/** What a Postgres error carries that callers read (its SQLSTATE above all), and nothing that cannot cross threads. */
function plainError(error) {
  const out = { message: error instanceof Error ? error.message : String(error) };
  for (const key of ['code', 'detail', 'hint', 'constraint', 'table', 'column', 'severity']) {
    if (typeof error?.[key] === 'string') out[key] = error[key];
  }
  return out;
}

let db;
/** Open transactions by id: each holds PGlite's lock until the main thread ends it. */
const transactions = new Map();
let nextTransaction = 1;

async function handle(message) {
  switch (message.op) {
    case 'query': {
      const on = message.tx === undefined ? db : transactions.get(message.tx)?.tx;
      if (on === undefined) throw new Error(`transaction ${message.tx} is over`);
      return { rows: (await on.query(message.sql, message.params)).rows };
    }
    case 'exec':
      await db.exec(message.sql);
      return {};
    case 'begin': {
      const id = nextTransaction++;
      let opened;
      const started = new Promise((resolve) => (opened = resolve));
      const done = db
        .transaction(async (tx) => {
          const end = new Promise((resolve) => transactions.set(id, { tx, end: resolve }));
          opened();
          if (!(await end)) await tx.rollback();
        })
        .finally(() => transactions.delete(id));
      // A transaction that could not begin fails here; one that began answers once it holds the lock.
      await Promise.race([started, done]);
      transactions.get(id).done = done;
      return { tx: id };
    }
    case 'end': {
      const open = transactions.get(message.tx);
      if (open === undefined) throw new Error(`transaction ${message.tx} is over`);
      open.end(message.commit);
      await open.done;
      return {};
    }
    case 'close':
      await db.close();
      return {};
    default:
      throw new Error(`unknown operation ${String(message.op)}`);
  }
}

try {
  db = await PGlite.create({ ...(dataDir === undefined ? {} : { dataDir }), initDbStartParams, startParams, ...wasm });
  parentPort.postMessage({ ready: true });
} catch (error) {
  parentPort.postMessage({ ready: false, error: plainError(error) });
}

parentPort.on('message', (message) => {
  handle(message).then(
    (result) => parentPort.postMessage({ id: message.id, ok: true, ...result }),
    (error) => parentPort.postMessage({ id: message.id, ok: false, error: plainError(error) }),
  );
});
