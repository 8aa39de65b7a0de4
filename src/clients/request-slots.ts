/**
 * How many requests each client has running, against the most it may (the request guard's
 * `limits.max_concurrent_requests_per_client`). In this process here; in Redis when replicas
 * share the cap (shared-state/redis-request-slots.ts), so a client cannot multiply it by the
 * number of replicas.
 */

/** `release` resolves once the slot is free for the client's next request, wherever it lands; never rejects. */
export type SlotTake = { ok: true; release(): Promise<void> } | { ok: false; running: number };

export interface RequestSlots {
  /** One of the client's `max` slots, released (once) when the request ends; or how many it has running now. */
  acquire(client: string, max: number): Promise<SlotTake>;
  /** Slots this process holds now, per client (for tests and metrics). */
  held(): Record<string, number>;
}

export function createMemoryRequestSlots(): RequestSlots {
  const running = new Map<string, number>();
  return {
    async acquire(client, max) {
      const now = running.get(client) ?? 0;
      if (now >= max) return { ok: false, running: now };
      running.set(client, now + 1);
      return takenSlot(() => {
        const left = (running.get(client) ?? 1) - 1;
        if (left <= 0) running.delete(client);
        else running.set(client, left);
      });
    },
    held: () => Object.fromEntries(running),
  };
}

/** A slot taken: `free` runs on its first release only; a second release resolves at once. */
export function takenSlot(free: () => void | Promise<void>): SlotTake {
  let released = false;
  return {
    ok: true,
    async release() {
      if (released) return;
      released = true;
      await free();
    },
  };
}
