import { KiwiError } from '../base/errors.js';
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
  /** `events` in the guaranteed order, adjacent text joined: one read's deltas travel the loop as one event. */
  function ordered(events: ChatEvent[]): ChatEvent[] {
    const out: ChatEvent[] = [];
    for (const e of events) {
      if (e.type === 'start') {
        if (started) continue;
      } else if (!started) {
        out.push(fallbackStart());
      }
      started = true;
      const last = out[out.length - 1];
      if (e.type === 'text' && last?.type === 'text') out[out.length - 1] = { type: 'text', text: last.text + e.text };
      else out.push(e);
    }
    return out;
  }
  let chunk = 0;
  try {
    for await (const batch of http.stream(req)) {
      // Events parsed from one socket read would otherwise still flow after an abort.
      if (signal?.aborted) throw cancelled();
      const decoded: ChatEvent[] = [];
      let done = false;
      for (const event of batch) {
        chunk += 1;
        const out = decoder.push(event, chunk);
        decoded.push(...out.events);
        if ((done = out.done)) break;
      }
      yield* ordered(decoded);
      if (done) break;
    }
  } catch (error) {
    throw fromHttpError(ctx, error);
  }
  if (signal?.aborted) throw cancelled();
  yield* ordered([...decoder.flush(), decoder.finish()]);
}
