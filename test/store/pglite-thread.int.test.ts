import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgliteDb } from '../../src/store/sql/pglite-db.js';
import { pgliteWasm } from '../../src/store/sql/pglite-wasm.js';
import type { SqlDb } from '../../src/store/sql/sql-db.js';

/** PGlite on its own worker thread keeps the promises of the in-process one: one transaction at a time, rollbacks, SQLSTATEs, the data on disk. */
describe('PGlite on a worker thread', () => {
  let dir: string;
  let db: SqlDb;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'kiwi-pglite-thread-'));
    db = await openPgliteDb(path.join(dir, 'db'), { thread: true });
    await db.exec('create table notes (id integer primary key, body text not null)');
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits a transaction, rolls back one that throws, and keeps the error of the one that threw', async () => {
    await db.transaction(async (tx) => {
      await tx.query('insert into notes values ($1, $2)', [1, 'kept']);
    });
    const thrown = await db
      .transaction(async (tx) => {
        await tx.query('insert into notes values ($1, $2)', [2, 'rolled back']);
        throw new Error('changed my mind');
      })
      .catch((error: unknown) => error);
    expect((thrown as Error).message).toBe('changed my mind');
    expect(await db.query('select id, body from notes order by id')).toEqual([{ id: 1, body: 'kept' }]);
  });

  it('reports a Postgres error with its SQLSTATE, as the in-process PGlite does', async () => {
    const error = (await db.query('insert into notes values ($1, $2)', [1, 'again']).catch((e: unknown) => e)) as Error & { code?: string };
    expect(error.code).toBe('23505');
    expect(error.message).toMatch(/duplicate key value violates unique constraint "notes_pkey"/);
    // A failed statement inside a transaction rolls the whole of it back.
    await expect(db.transaction(async (tx) => {
      await tx.query('insert into notes values ($1, $2)', [3, 'before']);
      await tx.query('insert into notes values ($1, $2)', [1, 'clash']);
    })).rejects.toMatchObject({ code: '23505' });
    expect(await db.query('select count(*)::int as n from notes')).toEqual([{ n: 1 }]);
  });

  it('runs one transaction at a time: a query from outside waits for the open one to end', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const open = db.transaction(async (tx) => {
      await tx.query('insert into notes values ($1, $2)', [10, 'first half']);
      await gate;
      await tx.query('insert into notes values ($1, $2)', [11, 'second half']);
    });
    const outside = db.query<{ n: number }>('select count(*)::int as n from notes where id >= 10');
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    await open;
    expect(await outside).toEqual([{ n: 2 }]);
  });

  it('keeps what it wrote on disk, and refuses calls once closed', async () => {
    await db.close();
    const reopened = await openPgliteDb(path.join(dir, 'db'), { thread: true });
    try {
      expect(await reopened.query('select count(*)::int as n from notes')).toEqual([{ n: 3 }]);
    } finally {
      await reopened.close();
    }
    await expect(reopened.query('select 1')).rejects.toThrow(/stopped/);
    db = await openPgliteDb(path.join(dir, 'db'), { thread: true });
  }, 60_000);

  it("is handed the process's compiled Postgres and initdb, under the names PGlite reads", async () => {
    const wasm = await pgliteWasm();
    expect(Object.keys(wasm).sort()).toEqual(['initdbWasmModule', 'pgliteWasmModule']);
    for (const compiled of Object.values(wasm)) expect(Object.prototype.toString.call(compiled)).toBe('[object WebAssembly.Module]');
    expect(await pgliteWasm()).toBe(wasm);
  });
});
