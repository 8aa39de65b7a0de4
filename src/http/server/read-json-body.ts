import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { KiwiError } from '../../base/errors.js';
import { jsonTooDeepAt, MAX_JSON_DEPTH } from '../../base/json-depth.js';
import { nodeBindings, type BodyDeadline } from './node-bindings.js';

/**
 * Reads a request body as JSON with a byte cap enforced while reading: a declared
 * Content-Length over the cap is refused before a byte is read, and a chunked body is cut off
 * as soon as it passes the cap, so a client cannot make the gateway buffer more than `maxBytes`.
 * Served on Node, the body comes straight from Node's request, by the deadline listen.ts set:
 * the whole body, not the gaps between chunks, so a client that sends a byte every few seconds
 * cannot hold a connection and a buffer for as long as it likes. JSON nested past
 * MAX_JSON_DEPTH is refused before it is parsed.
 */

export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

/** `application/json` and `application/<x>+json`, any parameters (charset) allowed. */
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

function tooLarge(maxBytes: number): KiwiError {
  return new KiwiError('PAYLOAD_TOO_LARGE', `The request body is larger than the gateway's limit of ${maxBytes} bytes; send fewer or shorter messages`);
}

function tooSlow(timeoutMs: number): KiwiError {
  return new KiwiError('REQUEST_TIMEOUT', `The request body did not arrive in full within ${timeoutMs / 1000} s; send it at once, or raise limits.body_timeout_ms in .ai/config/gateway.yaml`);
}

function clientGone(): KiwiError {
  return new KiwiError('TOOL_CANCELLED', 'The client went away while sending the request body');
}

export async function readJsonBody(c: Context, maxBytes: number): Promise<unknown> {
  const type = c.req.header('content-type') ?? '';
  if (!JSON_TYPE.test(type)) {
    throw new KiwiError('INVALID_INPUT', `The request body must be JSON: send it with "Content-Type: application/json"${type === '' ? ' (none was given)' : `, not "${type.slice(0, 100)}"`}`, {
      details: { status: 415 },
    });
  }
  const declared = c.req.header('content-length');
  if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes);

  const node = nodeBindings(c);
  const bytes = node === undefined ? await readWebBody(c.req.raw, maxBytes) : await readNodeBody(node.incoming, maxBytes, node.bodyDeadline);
  return parseJson(bytes);
}

/**
 * Node's request body, without letting go of the connection on a refusal: reading stops, and
 * the answer (413, 408) can still be sent; the server discards the rest.
 */
function readNodeBody(incoming: IncomingMessage, maxBytes: number, deadline: BodyDeadline | undefined): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = deadline === undefined ? undefined : setTimeout(() => stop(tooSlow(deadline.timeoutMs)), Math.max(0, deadline.at - performance.now()));
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) stop(tooLarge(maxBytes));
      else chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onGone = (): void => stop(clientGone());
    function cleanup(): void {
      clearTimeout(timer);
      incoming.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone);
    }
    function stop(error: KiwiError): void {
      cleanup();
      incoming.pause();
      reject(error);
    }
    if (incoming.readableEnded) return reject(new KiwiError('INTERNAL', 'The request body was read twice; this is a gateway bug: report it'));
    incoming.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onGone);
  });
}

/** The Web request's body (the app called without Node: `app.request`, tests). */
async function readWebBody(request: Request, maxBytes: number): Promise<Buffer> {
  if (request.body === null) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      if (request.signal.aborted) throw clientGone();
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
  return Buffer.concat(chunks, size);
}

function parseJson(bytes: Buffer): unknown {
  let textBody: string;
  try {
    textBody = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
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
