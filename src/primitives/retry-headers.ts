/**
 * An error answer's hints for when to ask again (`Retry-After`, and OpenAI's and Anthropic's
 * `retry-after-ms`), as sent, so that a proxy can pass them on to its own client.
 */
export function retryHeaders(headers: Record<string, string>): { retryAfter?: string; retryAfterMs?: string } {
  const retryAfter = headers['retry-after'];
  const retryAfterMs = headers['retry-after-ms'];
  return { ...(retryAfter === undefined ? {} : { retryAfter }), ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
}
