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

/** What `write` returns, or '' when it throws (the failure is reported next). */
function safely(write: () => string): string {
  try {
    return write();
  } catch {
    return '';
  }
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
      // Everything the loop has ready before the next macrotask goes out in one write: a burst of
      // upstream chunks costs one socket write instead of one each, and adjacent text events are
      // sent as one delta. Loops until something was written: a pull that enqueues nothing is not
      // called again.
      let out = '';
      let text = '';
      let later: Promise<'later'> | undefined;
      const encode = (event: LoopEvent): void => {
        if (event.type === 'text') {
          text += event.text;
          return;
        }
        if (text !== '') out += encoder.push({ type: 'text', text });
        text = '';
        out += encoder.push(event);
      };
      const flushText = (): void => {
        if (text !== '') out += encoder.push({ type: 'text', text });
        text = '';
      };
      while (!done) {
        pending ??= iterator.next();
        let step: IteratorResult<LoopEvent> | 'idle' | 'later';
        try {
          if (out === '' && text === '') step = await withKeepAlive(pending, keepAliveMs);
          else step = await Promise.race([pending, (later ??= new Promise((resolve) => setImmediate(resolve, 'later')))]);
        } catch (error) {
          pending = undefined;
          end(controller, abort.signal.aborted ? undefined : safely(() => (flushText(), out)) + encoder.fail(describe(error)));
          return;
        }
        if (step === 'idle') {
          controller.enqueue(bytes.encode(encoder.keepAlive()));
          return;
        }
        if (step === 'later') break; // `pending` carries over to the next pull
        pending = undefined;
        try {
          if (step.done) {
            flushText();
            end(controller, out + (encoder.finished ? '' : encoder.fail(describe(missingFinish()))));
            return;
          }
          encode(step.value);
        } catch (error) {
          // An event the encoder cannot write (arguments that are not JSON): a bug, told like a loop failure.
          end(controller, out + encoder.fail(describe(error)));
          return;
        }
        if (encoder.finished) {
          end(controller, out);
          return;
        }
      }
      try {
        flushText();
      } catch (error) {
        end(controller, out + encoder.fail(describe(error)));
        return;
      }
      if (out !== '' && !done) controller.enqueue(bytes.encode(out));
    },
    cancel(reason) {
      done = true;
      abort.abort(reason);
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    },
  });
}
