import type { ServerResponse } from 'node:http';
import type { LoopEvent } from '../../loop/loop-types.js';
import type { StreamEncoder } from './chat-protocol.js';
import { missingFinish } from './chat-protocol.js';
import type { ErrorOut } from './errors-out.js';

/**
 * The response body of a streamed chat: loop events pulled one batch at a time as the client
 * takes them (so a slow client slows the loop instead of filling a buffer), written by the
 * protocol's encoder. While the loop is quiet the encoder's keep-alive goes out. A loop failure
 * becomes the protocol's error event and ends the stream; a client that goes away aborts the
 * loop. Served on Node, the text goes straight to the socket (writeLoopSse); elsewhere as a Web
 * stream (loopSseStream).
 */

export interface LoopSseOptions {
  /** The loop's first step, already awaited (so its errors could still become an HTTP status). */
  first: IteratorResult<LoopEvent>;
  iterator: AsyncIterator<LoopEvent>;
  encoder: StreamEncoder;
  /** Aborts the loop; called when the client goes away. */
  abort: AbortController;
  /** Quiet time before a keep-alive is sent; 0 or less for none. */
  keepAliveMs: number;
  describe(error: unknown): ErrorOut;
}

interface LoopSsePump {
  /** The SSE text of everything the loop has ready (at least one event, or a keep-alive); undefined once the stream is over. */
  next(): Promise<string | undefined>;
  /** True once `next()` has returned the stream's last text. */
  readonly over: boolean;
  /** The client went away: stop the loop. */
  cancel(reason?: unknown): void;
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

function loopSsePump(options: LoopSseOptions): LoopSsePump {
  const { iterator, encoder, abort, keepAliveMs, describe } = options;
  // The step being awaited survives a keep-alive, so no event is lost or pulled twice.
  let pending: Promise<IteratorResult<LoopEvent>> | undefined = Promise.resolve(options.first);
  let done = false;

  /** The stream's last text; the next call returns undefined. */
  function end(last: string): string {
    done = true;
    void Promise.resolve(iterator.return?.()).catch(() => undefined);
    return last;
  }

  async function next(): Promise<string | undefined> {
    // Everything the loop has ready before the next macrotask goes out in one write: a burst of
    // upstream chunks costs one socket write instead of one each, and adjacent text events are
    // sent as one delta. Loops until there is something to write.
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
        return end(abort.signal.aborted ? '' : safely(() => (flushText(), out)) + encoder.fail(describe(error)));
      }
      if (step === 'idle') return encoder.keepAlive();
      if (step === 'later') break; // `pending` carries over to the next call
      pending = undefined;
      try {
        if (step.done) {
          flushText();
          return end(out + (encoder.finished ? '' : encoder.fail(describe(missingFinish()))));
        }
        encode(step.value);
      } catch (error) {
        // An event the encoder cannot write (arguments that are not JSON): a bug, told like a loop failure.
        return end(out + encoder.fail(describe(error)));
      }
      if (encoder.finished) return end(out);
    }
    if (done) return undefined;
    try {
      flushText();
    } catch (error) {
      return end(out + encoder.fail(describe(error)));
    }
    return out;
  }

  return {
    next,
    get over() {
      return done;
    },
    cancel(reason) {
      if (done) return;
      done = true;
      abort.abort(reason);
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    },
  };
}

/** The stream as a Web body, for a `Response`. */
export function loopSseStream(options: LoopSseOptions): ReadableStream<Uint8Array> {
  const pump = loopSsePump(options);
  const bytes = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A pull that enqueues nothing is not called again.
      let text = await pump.next();
      while (text === '') text = await pump.next();
      // After a cancel the controller is closed; writing to it would throw.
      try {
        if (text === undefined) controller.close();
        else if (text !== '') controller.enqueue(bytes.encode(text));
      } catch {
        // the client is gone
      }
    },
    cancel(reason) {
      pump.cancel(reason);
    },
  });
}

/**
 * The stream written to Node's response directly, headers included: no Web stream between the
 * loop and the socket. Resolves when the response has ended or the client has gone.
 */
export async function writeLoopSse(res: ServerResponse, headers: Record<string, string>, options: LoopSseOptions): Promise<void> {
  const pump = loopSsePump(options);
  let gone = false;
  const onClose = (): void => {
    gone = !res.writableFinished;
    if (gone) pump.cancel(new Error('the client closed the connection'));
  };
  res.once('close', onClose);
  res.writeHead(200, headers);
  // Events that are ready together (an upstream read holds several chunks) go out in one socket
  // write: the response is corked at the first and uncorked once this turn of the event loop ends.
  let corked = false;
  const uncork = (): void => {
    if (!corked) return;
    corked = false;
    res.uncork();
  };
  try {
    for (;;) {
      const text = await pump.next();
      if (gone) return;
      if (text === undefined) break;
      if (text === '') continue;
      // The last text goes out with the response's end (which uncorks): one socket write, not two.
      if (pump.over) {
        corked = false;
        res.end(text);
        return;
      }
      if (!corked) {
        corked = true;
        res.cork();
        setImmediate(uncork);
      }
      if (!res.write(text)) {
        uncork();
        await drained(res);
      }
      if (gone) return;
    }
    uncork();
    res.end();
  } finally {
    res.off('close', onClose);
  }
}

/** Resolves when the socket takes writes again, or the client is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}
