import { KiwiError } from '../errors.js';
import type { HttpClient, HttpRequest } from '../primitives/http-client.js';
import type { SseEvent } from '../primitives/sse-parser.js';
import type { ChatEvent, FinishEvent, StartEvent } from './types.js';
import { fromHttpError, type UpstreamContext } from './upstream-error.js';

/**
 * The part of streaming both adapters share: read the upstream's SSE events through the HTTP
 * client, let a provider's decoder turn each into chat events, and guarantee the event order
 * (one start, then text and tool calls, then one finish) whatever the upstream sends or leaves out.
 */

export interface WireDecoder {
  /** Chat events for one SSE event (`chunk` counts from 1); `done` when the upstream said the stream is over. Throws UPSTREAM_HTTP for errors and garbage. */
  push(event: SseEvent, chunk: number): { events: ChatEvent[]; done: boolean };
  /** Events held until the stream ends (native tool calls, sent in pieces); called once, before `finish`. */
  flush(): ChatEvent[];
  /** The finish so far: the reason and usage seen, or `other` when the upstream never said why it stopped. */
  finish(): FinishEvent;
}

export async function* streamChat(
  http: HttpClient,
  req: HttpRequest,
  decoder: WireDecoder,
  /** The start to send when the upstream never sent its own (a server that skips the opening chunk). */
  fallbackStart: () => StartEvent,
  ctx: UpstreamContext,
): AsyncGenerator<ChatEvent> {
  const signal = req.signal;
  const cancelled = (): KiwiError => new KiwiError('TOOL_CANCELLED', `${ctx.label}: the stream was cancelled`, { details: { url: ctx.url, model: ctx.model } });
  let started = false;
  function* ordered(events: ChatEvent[]): Generator<ChatEvent> {
    for (const e of events) {
      if (e.type === 'start') {
        if (started) continue;
      } else if (!started) {
        yield fallbackStart();
      }
      started = true;
      yield e;
    }
  }
  let chunk = 0;
  try {
    for await (const event of http.stream(req)) {
      // Events parsed from one socket read would otherwise still flow after an abort.
      if (signal?.aborted) throw cancelled();
      chunk += 1;
      const out = decoder.push(event, chunk);
      yield* ordered(out.events);
      if (out.done) break;
    }
  } catch (error) {
    throw fromHttpError(ctx, error);
  }
  if (signal?.aborted) throw cancelled();
  yield* ordered([...decoder.flush(), decoder.finish()]);
}
