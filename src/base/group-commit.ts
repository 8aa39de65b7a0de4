import { describeError } from './errors.js';

/**
 * Writes items in groups, in order, to a store that may be away for a while (a shared Postgres).
 * A write starts as soon as the one before it ends and takes every item that came meanwhile, so
 * under load many items share one round trip and alone an item waits only for its own. A group
 * that cannot be written is kept and tried again every second; while the store is away,
 * `add` does not wait for it (callers must not hang on an outage), and past `maxWaiting` items
 * the oldest are dropped.
 */
export interface GroupCommit<T> {
  /** Queues `item`; resolves once it is written, or at once while the store is failing. Never rejects. */
  add(item: T): Promise<void>;
  /** Resolves once no write is under way (items a failed write kept still wait for their retry). */
  idle(): Promise<void>;
  /** Stops retrying and makes one last try; returns how many items were left unwritten. */
  close(): Promise<number>;
  readonly waiting: number;
}

export interface GroupCommitOptions<T> {
  write(batch: T[]): Promise<void>;
  /** Most items in one write. */
  maxBatch: number;
  /** Items kept while the store is away; beyond, the oldest go. */
  maxWaiting: number;
  /** Told once per failing spell, and once per spell that drops items. */
  onFailure(message: string): void;
  /** What an item is and where it goes, for messages: "record", "Postgres". */
  what: string;
  store: string;
}

interface Waiting<T> { item: T; settle: () => void }

const RETRY_MS = 1_000;

export function createGroupCommit<T>(options: GroupCommitOptions<T>): GroupCommit<T> {
  const queue: Waiting<T>[] = [];
  let writing: Promise<void> | undefined;
  let retry: NodeJS.Timeout | undefined;
  let failing = false;
  /** Drops are told once per failing spell, not once per item. */
  let toldDrops = false;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, options.maxBatch);
      try {
        await options.write(batch.map((w) => w.item));
      } catch (error) {
        if (!failing) options.onFailure(`could not write ${queue.length} ${options.what}(s) to ${options.store} (${describeError(error)}); trying again every second`);
        failing = true;
        for (const w of queue) w.settle();
        retry ??= setTimeout(() => {
          retry = undefined;
          kick();
        }, RETRY_MS);
        retry.unref();
        return;
      }
      failing = false;
      toldDrops = false;
      queue.splice(0, batch.length);
      for (const w of batch) w.settle();
    }
  }

  function kick(): void {
    if (writing !== undefined || retry !== undefined) return;
    writing = drain().finally(() => {
      writing = undefined;
      if (queue.length > 0 && retry === undefined) kick();
    });
  }

  async function idle(): Promise<void> {
    while (writing !== undefined) await writing;
  }

  return {
    add(item) {
      let settle!: () => void;
      const written = new Promise<void>((resolve) => (settle = resolve));
      queue.push({ item, settle });
      if (failing) settle();
      if (queue.length > options.maxWaiting) {
        const dropped = queue.splice(0, queue.length - options.maxWaiting);
        for (const w of dropped) w.settle();
        if (!toldDrops) options.onFailure(`more than ${options.maxWaiting} ${options.what}s wait for ${options.store}; the oldest are dropped until it answers`);
        toldDrops = true;
      }
      kick();
      return written;
    },
    idle,
    async close() {
      await idle();
      if (retry !== undefined) {
        clearTimeout(retry);
        retry = undefined;
        await drain();
        clearTimeout(retry);
        retry = undefined;
      }
      const left = queue.splice(0);
      for (const w of left) w.settle();
      return left.length;
    },
    get waiting() {
      return queue.length;
    },
  };
}
