import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { followSignal } from '../../base/abort.js';
import { isKiwiError } from '../../base/errors.js';
import type { LoopEvent, RunLoop } from '../../loop/loop-types.js';
import { LOCAL_CALLER } from '../../clients/client-auth.js';
import type { Caller } from '../../policy/caller.js';
import type { ChatProtocol } from './chat-protocol.js';
import { toErrorOut, type ErrorOut } from './errors-out.js';
import { loopSseStream, writeLoopSse } from './loop-sse-stream.js';
import { MODE_HEADER, pickMode } from './mode.js';
import { nodeBindings, SENT_DIRECTLY } from '../server/node-bindings.js';
import { readJsonBody } from '../server/read-json-body.js';
import { CONVERSATION_HEADER, pickConversationId, REQUEST_ID_HEADER } from '../server/request-id.js';

/**
 * One chat request, for either protocol: read and check the body, pick the mode, start the
 * loop, and answer with a stream or one response. The loop's first step is awaited before any
 * byte is sent, so an unknown model or a refused upstream request still gets a real HTTP status;
 * after that, failures are the protocol's in-stream error event.
 */

export interface ChatHandlerDeps {
  runLoop: RunLoop;
  maxBodyBytes: number;
  keepAliveMs: number;
  requestId(c: Context): string;
  /** The client the request guard admitted the request for. */
  callerOf(request: Request): Caller | undefined;
  /** Told about every failure that is not a KiwiError (a bug): its message is not shown to the client. */
  onError?: (error: unknown, info: { requestId: string; route: string }) => void;
}

/** The kernel execution that records the request (GET /v0/executions/{id}/events, POST …/cancel). */
export const EXECUTION_ID_HEADER = 'x-kiwi-execution-id';

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // nginx and similar proxies buffer responses unless told not to.
  'x-accel-buffering': 'no',
};

export function createChatHandler(protocol: ChatProtocol, deps: ChatHandlerDeps): (c: Context) => Promise<Response> {
  return async (c) => {
    const requestId = deps.requestId(c);
    const clientSignal = c.req.raw.signal;

    const describe = (error: unknown): ErrorOut => {
      if (!isKiwiError(error)) deps.onError?.(error, { requestId, route: c.req.path });
      return toErrorOut(error, protocol.name, requestId);
    };
    const fail = (error: unknown): Response => {
      const out = describe(error);
      return c.json(protocol.errorBody(out), out.status as ContentfulStatusCode, out.headers ?? {});
    };

    let parsed;
    let mode;
    try {
      parsed = protocol.parse(await readJsonBody(c, deps.maxBodyBytes));
      const picked = pickMode(c.req.header(MODE_HEADER), parsed.request.model);
      mode = picked.mode;
      parsed.request.model = picked.model;
    } catch (error) {
      return fail(error);
    }

    // The loop stops when the client goes away or this handler stops it. Not AbortSignal.any: it
    // registers each request's signals for finalization, which only a full collection undoes
    // (under the gateway bench's load, 1.3 of the 2.2 MB of live heap sampled); the client's
    // signal lives as long as the request, so the link needs no undoing.
    const { controller: abort, signal } = followSignal(clientSignal);
    let iterator: AsyncIterator<LoopEvent>;
    let first: IteratorResult<LoopEvent>;
    try {
      const caller = deps.callerOf(c.req.raw) ?? LOCAL_CALLER;
      const conversation = pickConversationId(c.req.header(CONVERSATION_HEADER), requestId);
      iterator = deps.runLoop(parsed.request, { mode, signal, caller, conversation, endpoint: c.req.path })[Symbol.asyncIterator]();
      first = await iterator.next();
    } catch (error) {
      abort.abort();
      return fail(error);
    }

    const ctx = { mode, model: parsed.request.model, requestId, includeUsage: parsed.includeUsage };
    const executionId = !first.done && first.value.type === 'start' ? first.value.executionId : undefined;
    const executionHeader: Record<string, string> = executionId === undefined ? {} : { [EXECUTION_ID_HEADER]: executionId };
    if (parsed.stream) {
      const sse = { first, iterator, encoder: protocol.streamEncoder(ctx), abort, keepAliveMs: deps.keepAliveMs, describe };
      const outgoing = nodeBindings(c)?.outgoing;
      if (outgoing === undefined) return c.body(loopSseStream(sse), 200, { ...SSE_HEADERS, ...executionHeader });
      await writeLoopSse(outgoing, { ...SSE_HEADERS, ...executionHeader, [REQUEST_ID_HEADER]: requestId }, sse);
      return SENT_DIRECTLY;
    }

    const collector = protocol.collector(ctx);
    try {
      for (let step = first; !step.done; step = await iterator.next()) collector.push(step.value);
      return c.json(collector.body() as object, 200, executionHeader);
    } catch (error) {
      abort.abort();
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
      return fail(error);
    }
  };
}
