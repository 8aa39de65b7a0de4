import { open } from 'node:fs/promises';

/**
 * The whole of `file`, measured before it is read: one over `maxBytes` throws what
 * `tooLarge(size)` makes, and is never read. Errors opening or reading it (ENOENT included) are
 * thrown as they come, for the caller to word.
 */
export async function readCappedFile(file: string, maxBytes: number, tooLarge: (size: number) => Error, signal?: AbortSignal): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size > maxBytes) throw tooLarge(size);
    return await handle.readFile(signal ? { signal } : {});
  } finally {
    await handle.close();
  }
}
