import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

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
 * A fetch for the Streamable HTTP transport that caps the body of each POST answer (where tool
 * results arrive), because the SDK reads JSON and SSE bodies without a limit. The long-lived GET
 * notification stream is left alone: its total size grows for as long as the session lives.
 */
export function createCappedFetch(maxBytes: number, baseFetch: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await baseFetch(url, init);
    if (init?.method !== 'POST' || !response.ok || response.body === null || response.status === 204) return response;
    let seen = 0;
    const cap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > maxBytes) {
          controller.error(new Error(`${MESSAGE_TOO_LARGE_MARK}: the server's answer exceeded ${maxBytes} bytes`));
          return;
        }
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(cap), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/**
 * A fetch for the SSE transport, whose tool results arrive as events on the long-lived GET stream:
 * each event (the bytes between blank lines) is capped, not the stream.
 */
export function createEventCappedFetch(maxBytes: number, baseFetch: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await baseFetch(url, init);
    if ((init?.method ?? 'GET') !== 'GET' || !response.ok || response.body === null) return response;
    let inEvent = 0;
    let lastWasNewline = false;
    const cap = new TransformStream<Uint8Array, Uint8Array>({
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
    return new Response(response.body.pipeThrough(cap), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
