import type { IncomingMessage } from 'node:http';

const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** A request body for the bench's local servers, capped at 8 MiB. */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body over ${MAX_BODY_BYTES} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts);
}
