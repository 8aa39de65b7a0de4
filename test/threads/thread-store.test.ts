import { appendFileSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ThreadHeader } from '../../src/threads/thread-store.js';
import { fileThreadStore, THREADS_DIR } from '../../src/threads/file-thread-store.js';

/** `kiwi threads list` reads a thread's first and last lines from the ends of its file, however long it is. */

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'kiwi-thread-store-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const header = (id: string): ThreadHeader => ({ type: 'thread', id, directive: 'd', inputs: {}, model: 'm', client: 'local', depth: 1, started_at: new Date().toISOString() });

describe("a thread file's stamp", () => {
  it('moves when a line is written, stays otherwise, and is NOT_FOUND for no thread', async () => {
    const store = fileThreadStore(root);
    const id = '0190d2a0-0000-7000-8000-000000000001';
    const w = await store.create(header(id));
    const before = await store.stamp(id);
    expect(await store.stamp(id)).toBe(before);
    await w.append({ type: 'turn', turn: 1, text: 'more' });
    expect(await store.stamp(id)).not.toBe(before);
    await w.close();
    await expect(store.stamp('0190d2a0-0000-7000-8000-000000000002')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(store.stamp('../keys')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});

describe('listThreads', () => {
  it('lists the most recently written first, at most as many as asked for (the admin API pages on that)', async () => {
    const store = fileThreadStore(root);
    const ids = ['0190d2a0-0000-7000-8000-00000000000a', '0190d2a0-0000-7000-8000-00000000000b', '0190d2a0-0000-7000-8000-00000000000c'];
    for (const [i, id] of ids.entries()) {
      await (await store.create(header(id))).close();
      utimesSync(path.join(root, THREADS_DIR, `${id}.jsonl`), 1_700_000_000 + i, 1_700_000_000 + i);
    }
    // The first one written to last.
    utimesSync(path.join(root, THREADS_DIR, `${ids[0]}.jsonl`), 1_700_000_100, 1_700_000_100);
    expect((await store.list(2)).map((t) => t.header.id)).toEqual([ids[0], ids[2]]);
    expect(await store.list(5)).toHaveLength(3);
  });

  it("finds a long transcript's end, and tells a thread cut short (a torn last line, no lock) from a running one", async () => {
    const long = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff4000';
    const w = await fileThreadStore(root).create(header(long));
    for (let turn = 1; turn <= 40; turn++) await w.append({ type: 'turn', turn, text: `é${'x'.repeat(60_000)}` });
    await w.append({ type: 'end', status: 'completed', result: 'done', steps_taken: 0, ended_at: new Date().toISOString() });
    await w.close();

    const torn = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff4001';
    await (await fileThreadStore(root).create(header(torn))).close();
    appendFileSync(path.join(root, THREADS_DIR, `${torn}.jsonl`), '{"type":"turn","turn":1,"te');

    const running = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff4002';
    const open = await fileThreadStore(root).create(header(running));
    try {
      const byId = new Map((await fileThreadStore(root).list()).map((t) => [t.header.id, t]));
      expect(byId.get(long)).toMatchObject({ end: { status: 'completed', result: 'done' }, running: false });
      expect(byId.get(torn)).toMatchObject({ running: false });
      expect(byId.get(torn)?.end).toBeUndefined();
      expect(byId.get(running)).toMatchObject({ running: true });
    } finally {
      await open.close();
    }
  });

  it('takes a lock holding no real pid (0, -1, 1.5) as held by nobody: kill(0) and kill(-1) reach process groups', async () => {
    const ids = ['0195aaaa-bbbb-4ccc-8ddd-eeeeffff4010', '0195aaaa-bbbb-4ccc-8ddd-eeeeffff4011', '0195aaaa-bbbb-4ccc-8ddd-eeeeffff4012'];
    for (const [i, pid] of [0, -1, 1.5].entries()) {
      const id = ids[i] as string;
      await (await fileThreadStore(root).create(header(id))).close();
      writeFileSync(path.join(root, THREADS_DIR, `${id}.lock`), JSON.stringify({ pid, host: hostname() }));
    }
    const running = new Map((await fileThreadStore(root).list()).map((t) => [t.header.id, t.running]));
    expect(ids.map((id) => running.get(id))).toEqual([false, false, false]);
  });

  it('leaves out lines that are not a thread\'s, and a header naming another thread; ids are never paths', async () => {
    const store = fileThreadStore(root);
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff4020';
    const first = header(id);
    const w = await store.create(first);
    await w.append({ type: 'call', call_id: 'c1', tool: 'write_file', arguments: { content: 'x'.repeat(2 * 1024 * 1024) } });
    await w.close();
    appendFileSync(path.join(root, THREADS_DIR, `${id}.jsonl`), ['{"type":"turn","turn":2}', JSON.stringify(header(id)), '{"type":"shell"}', '7', ''].join('\n'));
    expect(await store.read(id)).toEqual([first, { type: 'call', call_id: 'c1', tool: 'write_file', arguments: `(arguments of ${2 * 1024 * 1024 + 14} characters, not kept: more than a thread's line holds)` }]);

    const copied = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff4021';
    writeFileSync(path.join(root, THREADS_DIR, `${copied}.jsonl`), `${JSON.stringify(header(id))}\n`);
    await expect(store.readHeader(copied)).rejects.toThrow(`no thread ${copied}`);
    expect((await store.list()).map((t) => t.header.id)).toEqual([id]);
    await expect(store.read('../../etc/passwd')).rejects.toThrow('is not a thread id');
  });
});
