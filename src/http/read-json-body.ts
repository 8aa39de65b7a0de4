import { KiwiError } from '../errors.js';
import { jsonTooDeepAt, MAX_JSON_DEPTH } from '../json-depth.js';

/**
 * Reads a request body as JSON with a byte cap enforced while reading: a declared
 * Content-Length over the cap is refused before a byte is read, and a chunked body is cut off
 * as soon as it passes the cap, so a client cannot make the gateway buffer more than `maxBytes`.
 * JSON nested past MAX_JSON_DEPTH is refused before it is parsed.
 */

export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** `application/json` and `application/<x>+json`, any parameters (charset) allowed. */
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

function tooLarge(maxBytes: number): KiwiError {
  return new KiwiError('PAYLOAD_TOO_LARGE', `The request body is larger than the gateway's limit of ${maxBytes} bytes; send fewer or shorter messages`);
}

export async function readJsonBody(request: Request, maxBytes: number, signal?: AbortSignal): Promise<unknown> {
  const type = request.headers.get('content-type') ?? '';
  if (!JSON_TYPE.test(type)) {
    throw new KiwiError('INVALID_INPUT', `The request body must be JSON: send it with "Content-Type: application/json"${type === '' ? ' (none was given)' : `, not "${type.slice(0, 100)}"`}`, {
      details: { status: 415 },
    });
  }
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (request.body === null) throw new KiwiError('INVALID_INPUT', 'The request body is empty; send a JSON object');

  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      if (signal?.aborted) throw new KiwiError('TOOL_CANCELLED', 'The client went away while sending the request body');
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw tooLarge(maxBytes);
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    throw error;
  }

  let textBody: string;
  try {
    textBody = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks, size));
  } catch {
    throw new KiwiError('INVALID_INPUT', 'The request body is not valid UTF-8; send UTF-8 encoded JSON');
  }
  if (textBody.trim() === '') throw new KiwiError('INVALID_INPUT', 'The request body is empty; send a JSON object');
  const deepAt = jsonTooDeepAt(textBody);
  if (deepAt !== -1) {
    throw new KiwiError('INVALID_INPUT', `The request body is nested too deeply: more than ${MAX_JSON_DEPTH} levels of arrays and objects (at character ${deepAt}); flatten it`);
  }
  try {
    return JSON.parse(textBody) as unknown;
  } catch (error) {
    const why = error instanceof SyntaxError ? error.message : 'it does not parse';
    throw new KiwiError('INVALID_INPUT', `The request body is not valid JSON (${why.slice(0, 200)}); send a JSON object`);
  }
}
