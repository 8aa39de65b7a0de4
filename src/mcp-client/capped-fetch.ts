import type { FetchLike } from '@modelcontextprotocol/client';

/** Marks the failure so the connection can tell "answer too large" from a network error, even after the SDK stringifies it. */
export const MESSAGE_TOO_LARGE_MARK = 'KIWI_MCP_MESSAGE_TOO_LARGE';

export function isMessageTooLarge(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (e instanceof Error) {
      if (e.message.includes(MESSAGE_TOO_LARGE_MARK) || e.message.startsWith('ReadBuffer exceeded maximum size')) return true;
      e = e.cause;
    } else return String(e).includes(MESSAGE_TOO_LARGE_MARK);
  }
  return false;
}

/**
 * A fetch for the HTTP transports that caps what a server sends, because the SDK reads bodies
 * without a limit. An event stream (a POST answered as SSE, the 2025 GET stream, a 2026-07-28
 * `subscriptions/listen` stream, the old HTTP+SSE transport's GET) is capped per event, the bytes
 * between blank lines, since it lives as long as the connection; any other body (JSON answers,
 * error pages) is capped in total.
 */
export function createCappedFetch(maxBytes: number, baseFetch: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await baseFetch(url, init);
    if (response.body === null || response.status === 204) return response;
    const events = (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');
    const cap = events ? eventCap(maxBytes) : totalCap(maxBytes);
    return new Response(response.body.pipeThrough(cap), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

function totalCap(maxBytes: number): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > maxBytes) {
        controller.error(new Error(`${MESSAGE_TOO_LARGE_MARK}: the server's answer exceeded ${maxBytes} bytes`));
        return;
      }
      controller.enqueue(chunk);
    },
  });
}

function eventCap(maxBytes: number): TransformStream<Uint8Array, Uint8Array> {
  let inEvent = 0;
  let lastWasNewline = false;
  return new TransformStream({
    transform(chunk, controller) {
      for (const byte of chunk) {
        if (byte === 13) continue;
        const newline = byte === 10;
        inEvent = newline && lastWasNewline ? 0 : inEvent + 1;
        lastWasNewline = newline;
        if (inEvent > maxBytes) {
          controller.error(new Error(`${MESSAGE_TOO_LARGE_MARK}: an event from the server exceeded ${maxBytes} bytes`));
          return;
        }
      }
      controller.enqueue(chunk);
    },
  });
}
