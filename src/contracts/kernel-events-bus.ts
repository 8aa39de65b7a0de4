/**
 * Word that the kernel committed events, for whoever waits on an execution: a chat waiting for
 * an approval, a chat that may be cancelled, a stream of an execution's events. It says only
 * which execution got which event types; the waiter reads the rest from the database. In this
 * process by default; over Redis pub/sub when replicas share a database (shared-state/), so a
 * grant or a cancel through one replica reaches the chat on another at once instead of at its
 * next look. A note can be lost (Redis away): waiters still look now and then.
 */

export interface CommittedEvents {
  execution: string;
  types: readonly string[];
}

export interface KernelEventsBus {
  /** True when it carries the other replicas' notes too (Redis): a waiter then need look only now and then. */
  readonly spansReplicas: boolean;
  publish(notes: readonly CommittedEvents[]): void;
  /** Every note from now on, this process's and the other replicas'; returns the unsubscribe. */
  subscribe(listener: (notes: readonly CommittedEvents[]) => void): () => void;
}

/** Resolves when an event of `execution` is noted (true), after `ms` (false), or at `signal`'s abort (rejects). */
export function nextEventOf(bus: KernelEventsBus | undefined, execution: string, ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = (value: boolean): void => {
      clearTimeout(timer);
      unsubscribe?.();
      signal?.removeEventListener('abort', onAbort);
      resolve(value);
    };
    const onAbort = (): void => {
      clearTimeout(timer);
      unsubscribe?.();
      reject(signal?.reason);
    };
    const timer = setTimeout(() => done(false), ms);
    const unsubscribe = bus?.subscribe((notes) => {
      if (notes.some((n) => n.execution === execution)) done(true);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** How often a waiter on the bus looks for itself: often when only this process's notes come, seldom when every replica's do. */
export function lookEveryMs(bus: KernelEventsBus | undefined, often: number): number {
  return bus?.spansReplicas === true ? Math.max(often, 5_000) : often;
}
