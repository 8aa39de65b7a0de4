import { describe, expect, it } from 'vitest';
import type { LoopEvent } from '../../src/loop/loop-types.js';
import { createOutbox } from '../../src/loop/outbox.js';

const text = (t: string): LoopEvent => ({ type: 'text', text: t });

async function drain<T>(gen: AsyncGenerator<LoopEvent, T>): Promise<{ events: string[]; value?: T; error?: unknown }> {
  const events: string[] = [];
  try {
    for (;;) {
      const r = await gen.next();
      if (r.done) return { events, value: r.value };
      events.push(r.value.type === 'text' ? r.value.text : r.value.type);
    }
  } catch (error) {
    return { events, error };
  }
}

describe('outbox', () => {
  it('hands out the events pushed while it waits, in order, then the value', async () => {
    const outbox = createOutbox();
    let settle: (value: number) => void = () => undefined;
    const waited = new Promise<number>((resolve) => (settle = resolve));
    outbox.push(text('a'));
    const result = drain(outbox.until(waited));
    await Promise.resolve();
    outbox.push(text('b'));
    setImmediate(() => {
      outbox.push(text('c'));
      settle(7);
    });
    expect(await result).toEqual({ events: ['a', 'b', 'c'], value: 7 });
  });

  it('throws a recorded failure after the events pushed before it, though what it waits on never settles', async () => {
    const outbox = createOutbox();
    const result = drain(outbox.until(new Promise<never>(() => undefined)));
    outbox.push(text('before'));
    outbox.fail(new Error('the resolver broke'));
    outbox.fail(new Error('a later failure is not the one reported'));
    const { events, error } = await result;
    expect(events).toEqual(['before']);
    expect(error).toEqual(new Error('the resolver broke'));
    expect(outbox.failure?.error).toBe(error);
  });

  it('throws the rejection of what it waits on, after the events before it', async () => {
    const outbox = createOutbox();
    outbox.push(text('x'));
    const { events, error } = await drain(outbox.until(Promise.reject(new Error('upstream 500'))));
    expect(events).toEqual(['x']);
    expect(error).toEqual(new Error('upstream 500'));
  });

  it('quietly: hands out the events already pushed, then awaits the promise itself and returns its value, or its rejection, or a recorded failure', async () => {
    const outbox = createOutbox();
    outbox.push(text('a'));
    outbox.push(text('b'));
    expect(await drain(outbox.quietly(Promise.resolve(5)))).toEqual({ events: ['a', 'b'], value: 5 });
    outbox.push(text('c'));
    const rejected = await drain(outbox.quietly(Promise.reject(new Error('upstream 500'))));
    expect(rejected.events).toEqual(['c']);
    expect(rejected.error).toEqual(new Error('upstream 500'));
    outbox.fail(new Error('the worker broke'));
    const failed = await drain(outbox.quietly(new Promise<never>(() => undefined)));
    expect(failed.error).toEqual(new Error('the worker broke'));
  });
});
