import type { Dispatcher } from 'undici';

/**
 * The response side of the `http_client` primitive (http-client.ts): its headers flattened, its
 * body read up to a cap, decoded in its charset, drained briefly so the connection can be kept,
 * or cut.
 */

type Response = Dispatcher.ResponseData;

const TRAILING_MS = 500;
const TRAILING_BYTES = 16 * 1024;
const ERROR_EXCERPT_BYTES = 2048;

export function flattenHeaders(raw: Response['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Ends an unfinished transfer; the abort error undici then emits has nobody else to hear it. */
export function discard(res: Response): void {
  res.body.on('error', () => undefined);
  res.body.destroy();
}

/**
 * The consumer of a stream stopped reading without cancelling: typically at the stream's own
 * end event, with the end of the response a packet behind. The rest may arrive, briefly and up
 * to a few KiB, so that the connection goes back to the pool instead of being cut (a new
 * connection per request costs an LLM API a TLS handshake each); then it is cut.
 */
export function release(res: Response): void {
  const cut = setTimeout(() => discard(res), TRAILING_MS);
  cut.unref();
  void res.body
    .dump({ limit: TRAILING_BYTES })
    .catch(() => undefined)
    .finally(() => clearTimeout(cut));
}

/** Reads at most `cap` bytes; past that the transfer is aborted and `over` is set. */
export async function readUpTo(res: Response, cap: number): Promise<{ data: Buffer; over: boolean }> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      total += chunk.length;
      if (total > cap) return { data: Buffer.concat(chunks).subarray(0, cap), over: true };
    }
    return { data: Buffer.concat(chunks, total), over: false };
  } finally {
    // Destroying a body that was read to the end would still cost the keep-alive connection.
    if (!res.body.readableEnded) discard(res);
  }
}

export function decoderFor(contentType: string | undefined) {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8');
  } catch {
    return new TextDecoder('utf-8');
  }
}

/** A short, printable start of an error body, for messages; never throws. */
export async function excerpt(res: Response): Promise<string> {
  const { data } = await readUpTo(res, ERROR_EXCERPT_BYTES).catch(() => ({ data: Buffer.alloc(0) }));
  return new TextDecoder().decode(data).replace(/\s+/g, ' ').trim() || '(empty body)';
}
