import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mountLiveEvents } from '../../src/console/live-events.js';
import type { KernelEventsBus } from '../../src/contracts/kernel-events-bus.js';
import { createMemoryKernelEventsBus } from '../../src/shared-state/kernel-events-bus.js';

/**
 * GET /ui/events (issue 39 items 6 and 7): one key's live pages cannot take the process's streams
 * (a share per key), a page that follows the kernel looks when the kernel says something changed
 * instead of re-reading every second, and a stream that closes lets go of its listener on the
 * kernel's events, its timer and its slot. In process, with a session per `x-key` header and an
 * admin API that counts its reads.
 */

/** The memory bus, counting who listens, with a promise for when nobody does. */
function countingBus(): KernelEventsBus & { listening(): number; quiet(): Promise<void> } {
  const bus = createMemoryKernelEventsBus();
  let listening = 0;
  let waiters: (() => void)[] = [];
  return {
    spansReplicas: false,
    publish: (notes) => bus.publish(notes),
    subscribe(listener) {
      listening++;
      const off = bus.subscribe(listener);
      return () => {
        off();
        if (--listening === 0) for (const wake of waiters.splice(0)) wake();
      };
    },
    listening: () => listening,
    quiet: () => (listening === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
  };
}

function liveApp(lookMs = 0): { app: Hono; bus: ReturnType<typeof countingBus>; reads(): number; change(): void } {
  const bus = countingBus();
  const app = new Hono();
  let reads = 0;
  let version = 0;
  mountLiveEvents(app, {
    sessionOf: async (c) => {
      const key = c.req.header('x-key');
      return key === undefined ? undefined : { key, caller: { client: key, roles: ['approver'] }, viewer: { client: key, csrf: '', may: () => true } };
    },
    admin: async () => {
      reads++;
      return { status: 200, body: { version } };
    },
    events: bus,
    lookMs,
    // Only a note makes a look here: a stream that polled would read at every beat.
    idleLookMs: 3_600_000,
  });
  return { app, bus, reads: () => reads, change: () => void version++ };
}

interface Stream {
  status: number;
  /** Reads until an event of this name has come. */
  until(event: string): Promise<void>;
  close(): Promise<void>;
}

async function open(app: Hono, key: string): Promise<Stream> {
  const res = await app.request('/ui/events?live=executions', { headers: { 'x-key': key } });
  const reader = res.body?.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const stream: Stream = {
    status: res.status,
    async until(event) {
      while (!text.includes(`event: ${event}\n`)) {
        const chunk = await reader?.read();
        if (chunk === undefined || chunk.done) throw new Error(`the stream ended before ${event}`);
        text += decoder.decode(chunk.value, { stream: true });
      }
      text = text.slice(text.indexOf(`event: ${event}\n`) + event.length + 8);
    },
    close: async () => void (await reader?.cancel()),
  };
  if (res.status === 200) await stream.until('ready');
  return stream;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('/ui/events', () => {
  it("keeps one key to its share of the streams: an approver's many tabs leave the admin's live page open", async () => {
    const { app, bus } = liveApp();
    const approver: Stream[] = [];
    let refused: Stream | undefined;
    while (refused === undefined && approver.length <= 64) {
      const stream = await open(app, 'approver');
      if (stream.status === 200) approver.push(stream);
      else refused = stream;
    }
    expect(approver).toHaveLength(8);
    expect(refused?.status).toBe(429);
    const admin = await open(app, 'admin');
    expect(admin.status).toBe(200);
    await admin.close();
    for (const s of approver) await s.close();
    await bus.quiet();
  });

  it('looks once for each change the kernel tells of, and not in between', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { app, bus, reads, change } = liveApp(1000);
    const stream = await open(app, 'admin');
    // The approvals and the executions, read once to start from; a minute with nothing told reads nothing more.
    expect(reads()).toBe(2);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(reads()).toBe(2);
    change();
    bus.publish([{ execution: 'e1', types: ['execution.created'] }]);
    await vi.advanceTimersByTimeAsync(1000);
    await stream.until('changed');
    expect(reads()).toBe(4);
    await stream.close();
    await bus.quiet();
  });

  it('lets go of everything a stream held once it closes: 64 streams opened and closed leave no listener, no timer and every slot free', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { app, bus, reads } = liveApp();
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8'];
    for (let round = 0; round < 2; round++) {
      const streams: Stream[] = [];
      for (const key of keys) for (let i = 0; i < 8; i++) streams.push(await open(app, key));
      expect(streams.map((s) => s.status)).toEqual(Array(64).fill(200));
      // The process's 64 are taken, by keys within their share: a ninth key waits.
      expect((await open(app, 'k9')).status).toBe(503);
      for (const s of streams) await s.close();
      await bus.quiet();
      expect(bus.listening()).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
    }
    // Told of a change now, nobody reads.
    const before = reads();
    bus.publish([{ execution: 'e1', types: ['execution.cancelled'] }]);
    expect(reads()).toBe(before);
  });
});
