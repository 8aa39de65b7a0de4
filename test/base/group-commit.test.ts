import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../src/base/group-commit.js';

/** A store whose writes finish when the test says, and fail while it is `down`. */
function fakeStore() {
  const writes: number[][] = [];
  const finish: (() => void)[] = [];
  const state = { down: false };
  return {
    writes,
    state,
    /** Ends the oldest write under way. */
    finishOne: () => finish.shift()?.(),
    write: (batch: number[]): Promise<void> => {
      if (state.down) return Promise.reject(new Error('connect ECONNREFUSED'));
      writes.push(batch);
      return new Promise<void>((resolve) => finish.push(resolve));
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('group commit', () => {
  it('writes the first item at once and everything that came during a write in the next one, resolving each when its write ends', async () => {
    const store = fakeStore();
    const messages: string[] = [];
    const commit = createGroupCommit<number>({ write: store.write, maxBatch: 100, maxWaiting: 1000, onFailure: (m) => messages.push(m), what: 'record', store: 'Postgres' });
    const done: number[] = [];
    const add = (n: number) => void commit.add(n).then(() => done.push(n));
    add(1);
    await tick();
    add(2);
    add(3);
    await tick();
    expect(store.writes).toEqual([[1]]);
    expect(done).toEqual([]);
    store.finishOne();
    await tick();
    expect(done).toEqual([1]);
    expect(store.writes).toEqual([[1], [2, 3]]);
    store.finishOne();
    await commit.idle();
    expect(done).toEqual([1, 2, 3]);
    expect(messages).toEqual([]);
  });

  it('keeps what the store refused, lets callers go on meanwhile, writes it once the store answers, and drops the oldest past the cap, saying so once', async () => {
    const store = fakeStore();
    store.state.down = true;
    const messages: string[] = [];
    const commit = createGroupCommit<number>({ write: store.write, maxBatch: 100, maxWaiting: 3, onFailure: (m) => messages.push(m), what: 'record', store: 'Postgres' });
    await commit.add(1); // resolves although nothing was written
    for (const n of [2, 3, 4, 5]) await commit.add(n);
    expect(commit.waiting).toBe(3);
    expect(messages).toEqual([
      expect.stringMatching(/^could not write 1 record\(s\) to Postgres \(connect ECONNREFUSED\); trying again every second$/),
      'more than 3 records wait for Postgres; the oldest are dropped until it answers',
    ]);
    store.state.down = false;
    await expect.poll(() => store.writes.length, { timeout: 3000 }).toBe(1);
    expect(store.writes).toEqual([[3, 4, 5]]);
    store.finishOne();
    await commit.idle();
    expect(commit.waiting).toBe(0);
  });

  it('makes one last try on close and says how many items it could not write', async () => {
    const store = fakeStore();
    store.state.down = true;
    const commit = createGroupCommit<number>({ write: store.write, maxBatch: 100, maxWaiting: 100, onFailure: () => undefined, what: 'record', store: 'Postgres' });
    await commit.add(1);
    await commit.add(2);
    expect(await commit.close()).toBe(2);
    expect(commit.waiting).toBe(0);
  });
});
