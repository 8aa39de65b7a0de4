import { anthropicErrorBody, openAiErrorBody } from '../chat/errors-out.js';

/**
 * The 503 for a request on a connection past the gateway's connection cap, in the protocol its
 * path speaks, so that SDK clients show the message and retry after `Retry-After` as they do
 * for their own vendor's overload answers. The connection is closed after it, to free the slot.
 */
export function overloadedResponse(request: Request, maxConnections: number): Response {
  const message = `The gateway is serving its limit of ${maxConnections} connections; retry in a moment (the limit is limits.max_connections in .ai/config/gateway.yaml)`;
  const path = new URL(request.url).pathname;
  const body =
    path === '/mcp'
      ? { jsonrpc: '2.0', error: { code: -32000, message }, id: null }
      : path === '/v1/messages'
        ? anthropicErrorBody({ status: 503, message, type: 'overloaded_error' })
        : openAiErrorBody({ status: 503, message });
  return new Response(JSON.stringify(body), {
    status: 503,
    headers: { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' },
  });
}
