import type { LoopEvent } from './loop-types.js';

/**
 * Where the agent loop's two producers, the stream reader and the intent worker, put their
 * events, and how the loop's generator hands them out in the order they happened while it waits
 * on something else (the next upstream chunk, the worker draining).
 */
export interface Outbox {
  push(event: LoopEvent): void;
  /** Records the first failure of background work and wakes `until`, which throws it. */
  fail(error: unknown): void;
  readonly failure: { error: unknown } | undefined;
  /**
   * Yields events until `promise` settles, then returns its value or throws its error. Events
   * pushed before it settles always come out first; a recorded failure is thrown after the
   * events pushed before it.
   */
  until<T>(promise: Promise<T>): AsyncGenerator<LoopEvent, T>;
  /**
   * `until` for when nothing runs in the background (no intent in flight): the events already
   * pushed, then the promise awaited directly. Per upstream chunk this saves a race and the
   * promises `until` makes to be woken, which a pass-through stream pays for every chunk.
   */
  quietly<T>(promise: Promise<T>): AsyncGenerator<LoopEvent, T>;
}

const WAKE = Symbol('wake');

export function createOutbox(): Outbox {
  let events: LoopEvent[] = [];
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  const ready = (): Promise<typeof WAKE> => (events.length > 0 ? Promise.resolve(WAKE) : new Promise((resolve) => (wake = () => resolve(WAKE))));

  return {
    push(event) {
      events.push(event);
      notify();
    },
    fail(error) {
      failure ??= { error };
      notify();
    },
    get failure() {
      return failure;
    },
    async *quietly<T>(promise: Promise<T>): AsyncGenerator<LoopEvent, T> {
      const out = events;
      events = [];
      yield* out;
      if (failure) throw failure.error;
      return await promise;
    },
    async *until<T>(promise: Promise<T>): AsyncGenerator<LoopEvent, T> {
      const settled = promise.then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      );
      for (;;) {
        const r = await Promise.race([settled, ready()]);
        const out = events;
        events = [];
        yield* out;
        if (failure) throw failure.error;
        if (r === WAKE) continue;
        if (r.ok) return r.value;
        throw r.error;
      }
    },
  };
}
