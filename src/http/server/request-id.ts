import { randomUUID } from 'node:crypto';

/**
 * The id of one request, echoed in `x-request-id` so a client's logs and the gateway's can be
 * matched. A client's own id is kept when it is a plain token (it ends up in logs and headers,
 * so nothing else is trusted); otherwise one is made.
 */

export const REQUEST_ID_HEADER = 'x-request-id';

const TOKEN = /^[A-Za-z0-9._:-]{1,128}$/;

export function pickRequestId(given: string | undefined): string {
  if (given !== undefined && TOKEN.test(given)) return given;
  return `req_${randomUUID().replaceAll('-', '')}`;
}

/** A client may name the conversation a request belongs to, so the audit can group its requests. */
export const CONVERSATION_HEADER = 'x-kiwi-conversation';

/** The client's conversation id when it is a plain token; otherwise the request's own id. */
export function pickConversationId(given: string | undefined, requestId: string): string {
  return given !== undefined && TOKEN.test(given) ? given : requestId;
}
