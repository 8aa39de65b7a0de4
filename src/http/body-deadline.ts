import { KiwiError } from '../errors.js';

/**
 * A request body that must have arrived in full within `timeoutMs` of the call, or its next read
 * fails with REQUEST_TIMEOUT. The deadline covers the whole body, not the gaps between chunks: a
 * client that sends one byte every few seconds never leaves a gap long enough for an idle timer,
 * and would otherwise hold a connection and a body buffer for as long as it likes.
 */
export function bodyWithDeadline(body: ReadableStream<Uint8Array>, timeoutMs: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new KiwiError('REQUEST_TIMEOUT', `The request body did not arrive in full within ${timeoutMs / 1000} s; send it at once, or raise limits.body_timeout_ms in .ai/config/gateway.yaml`));
    }, timeoutMs);
    // A body nobody reads (a request answered without it) must not keep the process alive.
    timer.unref();
  });
  // Nobody may be reading when the deadline passes; the rejection is seen by the next read.
  expired.catch(() => undefined);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await Promise.race([reader.read(), expired]);
        if (done) {
          clearTimeout(timer);
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        clearTimeout(timer);
        controller.error(error);
      }
    },
    cancel(reason) {
      clearTimeout(timer);
      return reader.cancel(reason);
    },
  });
}
