import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * PGlite's WebAssembly (Postgres and initdb), compiled once per process and handed to every
 * PGlite it opens, on a thread (pglite-worker-db.ts) or in process (pglite-db.ts). Held for the
 * process, as the USE-lite worker is (embed/use-lite-worker-lease.ts): the same compiled code
 * whoever asks, never freed. Before, each thread compiled and, when it ended, freed its own (the
 * option meant to share it was named `wasmModule`, which PGlite 0.5 does not read), and a test run's
 * worker process once died in V8's `UnregisterWasmAllocation`, freeing wasm code. Five opens of a
 * database on threads took 2.9 s of CPU instead of 3.2 s. If a program cannot be compiled here,
 * PGlite compiles its own, as before.
 */
let compiled: Promise<PgliteWasm> | undefined;

/** PGlite's options for its two programs (Postgres, and initdb for a new database), each absent where it could not be compiled. */
export interface PgliteWasm {
  pgliteWasmModule?: object;
  initdbWasmModule?: object;
}

/** The global WebAssembly (a WebAssembly.Module is opaque here): lib "ES2023" and @types/node declare no value for it. */
const webAssembly = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<object> } }).WebAssembly;

export function pgliteWasm(): Promise<PgliteWasm> {
  compiled ??= (async () => {
    const dist = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    const compile = (file: string): Promise<object | undefined> => readFile(path.join(dist, file)).then((bytes) => webAssembly.compile(bytes)).catch(() => undefined);
    const [pglite, initdb] = await Promise.all([compile('pglite.wasm'), compile('initdb.wasm')]);
    return { ...(pglite === undefined ? {} : { pgliteWasmModule: pglite }), ...(initdb === undefined ? {} : { initdbWasmModule: initdb }) };
  })();
  return compiled;
}
