import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';

/**
 * A long-lived SSE response the kernel pushes events into (§8.1): `retry: 5000` first, a
 * `:heartbeat` comment every 5 s, each event one `event:`/`data:` frame. Pushes never wait on the
 * client: they queue, up to a cap, and a client that lets the queue fill is cut off (its `send`
 * returns false, as for a closed one), so one slow reader cannot stall the kernel.
 */

export interface SseChannel {
  /** False when the channel is closed or its queue is full (the event is not sent). */
  send(event: string, data: unknown, id?: number): boolean;
  close(): void;
  /** Resolves when the client has gone or close() was called. */
  readonly closed: Promise<void>;
}

export interface SseChannelOptions {
  heartbeatMs?: number;
  maxQueued?: number;
  /** The server is stopping: the channel ends (what is queued still goes out) instead of holding the shutdown's grace period. */
  until?: AbortSignal;
}

export function openSseChannel(c: Context, onOpen: (channel: SseChannel) => void | Promise<void>, options: SseChannelOptions = {}): Response {
  const heartbeatMs = options.heartbeatMs ?? 5_000;
  const maxQueued = options.maxQueued ?? 64;
  c.header('X-Accel-Buffering', 'no');
  return streamSSE(c, async (stream) => {
    const queue: string[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    let markClosed!: () => void;
    const closed = new Promise<void>((resolve) => (markClosed = resolve));
    const finish = (): void => {
      if (done) return;
      done = true;
      markClosed();
      wake?.();
    };
    stream.onAbort(finish);
    const until = options.until;
    if (until?.aborted) finish();
    else until?.addEventListener('abort', finish, { once: true });
    const channel: SseChannel = {
      send(event, data, id) {
        if (done) return false;
        if (queue.length >= maxQueued) {
          finish();
          return false;
        }
        queue.push(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        wake?.();
        return true;
      },
      close: finish,
      closed,
    };
    // Opened before the first byte goes out: a client that has read it is registered (its
    // connection takes the next execution or job), even if the rest of onOpen is still running.
    const opening = (async () => onOpen(channel))();
    opening.catch(() => undefined); // awaited below; not unhandled while the first write waits
    await stream.write('retry: 5000\n\n');
    const heartbeat = setInterval(() => {
      if (queue.length === 0) queue.push(':heartbeat\n\n');
      wake?.();
    }, heartbeatMs);
    try {
      await opening;
      while (!done || queue.length > 0) {
        if (queue.length === 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        const text = queue.splice(0).join('');
        await stream.write(text);
        if (stream.aborted) finish();
      }
    } finally {
      clearInterval(heartbeat);
      until?.removeEventListener('abort', finish);
      finish();
    }
  });
}
