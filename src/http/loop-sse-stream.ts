import type { LoopEvent } from '../gateway/loop-types.js';
import type { StreamEncoder } from './chat-protocol.js';
import { missingFinish } from './chat-protocol.js';
import type { ErrorOut } from './errors-out.js';

/**
 * The response body of a streamed chat: loop events pulled one at a time as the client reads
 * (so a slow client slows the loop instead of filling a buffer), written by the protocol's
 * encoder. While the loop is quiet the encoder's keep-alive goes out. A loop failure becomes the
 * protocol's error event and ends the stream; a client that goes away cancels the body, which
 * aborts the loop's signal.
 */

export interface LoopSseOptions {
  /** The loop's first step, already awaited (so its errors could still become an HTTP status). */
  first: IteratorResult<LoopEvent>;
  iterator: AsyncIterator<LoopEvent>;
  encoder: StreamEncoder;
  /** Aborts the loop; called when the body is cancelled. */
  abort: AbortController;
  /** Quiet time before a keep-alive is sent; 0 or less for none. */
  keepAliveMs: number;
  describe(error: unknown): ErrorOut;
}

function withKeepAlive<T>(step: Promise<T>, ms: number): Promise<T | 'idle'> {
  if (ms <= 0) return step;
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<'idle'>((resolve) => {
    timer = setTimeout(() => resolve('idle'), ms);
  });
  return Promise.race([step, idle]).finally(() => clearTimeout(timer));
}

export function loopSseStream(options: LoopSseOptions): ReadableStream<Uint8Array> {
  const { iterator, encoder, abort, keepAliveMs, describe } = options;
  const bytes = new TextEncoder();
  // The step being awaited survives a keep-alive, so no event is lost or pulled twice.
  let pending: Promise<IteratorResult<LoopEvent>> | undefined = Promise.resolve(options.first);
  let done = false;

  function end(controller: ReadableStreamDefaultController<Uint8Array>, last?: string): void {
    done = true;
    // After a cancel the controller is closed; writing to it would throw.
    try {
      if (last !== undefined && last !== '') controller.enqueue(bytes.encode(last));
      controller.close();
    } catch {
      // the client is gone
    }
    void Promise.resolve(iterator.return?.()).catch(() => undefined);
  }

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Loops until something was written: a pull that enqueues nothing is not called again.
      while (!done) {
        pending ??= iterator.next();
        let step: IteratorResult<LoopEvent> | 'idle';
        try {
          step = await withKeepAlive(pending, keepAliveMs);
        } catch (error) {
          pending = undefined;
          end(controller, abort.signal.aborted ? undefined : encoder.fail(describe(error)));
          return;
        }
        if (step === 'idle') {
          controller.enqueue(bytes.encode(encoder.keepAlive()));
          return;
        }
        pending = undefined;
        if (step.done) {
          end(controller, encoder.finished ? undefined : encoder.fail(describe(missingFinish())));
          return;
        }
        let text: string;
        try {
          text = encoder.push(step.value);
        } catch (error) {
          // An event the encoder cannot write (arguments that are not JSON): a bug, told like a loop failure.
          end(controller, encoder.fail(describe(error)));
          return;
        }
        if (encoder.finished) {
          end(controller, text);
          return;
        }
        if (text !== '') {
          controller.enqueue(bytes.encode(text));
          return;
        }
      }
    },
    cancel(reason) {
      done = true;
      abort.abort(reason);
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    },
  });
}
