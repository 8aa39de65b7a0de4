import { randomUUID } from 'node:crypto';
import type { CommittedEvents, KernelEventsBus } from '../contracts/kernel-events-bus.js';
import type { Redis } from './redis-client.js';

/** Notes go to this process's listeners at once, in the order published; a listener that throws troubles no other. */
export function createMemoryKernelEventsBus(): KernelEventsBus & { deliver(notes: readonly CommittedEvents[]): void } {
  const listeners = new Set<(notes: readonly CommittedEvents[]) => void>();
  const deliver = (notes: readonly CommittedEvents[]): void => {
    for (const listener of [...listeners]) {
      try {
        listener(notes);
      } catch {
        // a waiter's own failure; the others still hear
      }
    }
  };
  return {
    spansReplicas: false,
    publish: deliver,
    deliver,
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
}

/** A published message: who sent it (its own copy coming back is skipped) and the notes. */
interface Message {
  from: string;
  notes: readonly CommittedEvents[];
}

/**
 * Over Redis pub/sub, on one channel: this process's listeners hear its own notes at once (not
 * through Redis), the other replicas' as Redis delivers them. Publishing never waits or fails the
 * writer: a note lost while Redis is away only means a waiter finds out at its next look.
 * Subscribing takes a connection of its own (a subscribed connection can do nothing else).
 */
export async function createRedisKernelEventsBus(redis: Redis, options: { prefix: string }): Promise<KernelEventsBus & { close(): Promise<void> }> {
  const channel = `${options.prefix}kernel-events`;
  const me = randomUUID();
  const local = createMemoryKernelEventsBus();
  const subscriber = redis.duplicate();
  subscriber.on('error', () => undefined); // the main connection reports outages
  await subscriber.connect();
  await subscriber.subscribe(channel, (text) => {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.from === me || !Array.isArray(message.notes)) return;
    local.deliver(message.notes.filter((n) => typeof n?.execution === 'string' && Array.isArray(n.types)));
  });
  return {
    spansReplicas: true,
    publish(notes) {
      local.deliver(notes);
      redis.publish(channel, JSON.stringify({ from: me, notes } satisfies Message)).catch(() => undefined);
    },
    subscribe: local.subscribe,
    async close() {
      await subscriber.close().catch(() => subscriber.destroy());
    },
  };
}
