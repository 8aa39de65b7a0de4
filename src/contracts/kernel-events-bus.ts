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

/**
 * Notes of one execution's events, for a waiter that reads the database and then waits: it
 * listens from the start, so a note that comes while it reads is not missed (its next `wait`
 * returns at once). `close` stops listening.
 */
export interface ExecutionWatch {
  /** True when a note came since the last wait (or comes within `ms`); false after `ms`; rejects at `signal`'s abort. */
  wait(ms: number, signal?: AbortSignal): Promise<boolean>;
  close(): void;
}

export function watchExecution(bus: KernelEventsBus | undefined, execution: string): ExecutionWatch {
  let noted = false;
  let wake: (() => void) | undefined;
  const unsubscribe = bus?.subscribe((notes) => {
    if (!notes.some((n) => n.execution === execution)) return;
    noted = true;
    wake?.();
  });
  return {
    wait(ms, signal) {
      if (noted) {
        noted = false;
        return Promise.resolve(true);
      }
      return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const done = (): void => {
          clearTimeout(timer);
          wake = undefined;
          signal?.removeEventListener('abort', onAbort);
        };
        const onAbort = (): void => {
          done();
          reject(signal?.reason);
        };
        const timer = setTimeout(() => {
          done();
          resolve(false);
        }, ms);
        wake = () => {
          done();
          noted = false;
          resolve(true);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    close: () => unsubscribe?.(),
  };
}

/** How often a waiter on the bus looks for itself: often when only this process's notes come, seldom when every replica's do. */
export function lookEveryMs(bus: KernelEventsBus | undefined, often: number): number {
  return bus?.spansReplicas === true ? Math.max(often, 5_000) : often;
}
