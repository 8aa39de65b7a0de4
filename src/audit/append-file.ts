import { mkdir, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

const SCAN_CHUNK = 64 * 1024;

/** Writes all of `text` and makes it durable. */
export async function writeAll(handle: FileHandle, text: string): Promise<void> {
  const buffer = Buffer.from(text);
  for (let offset = 0; offset < buffer.length; ) offset += (await handle.write(buffer, offset, buffer.length - offset)).bytesWritten;
  await handle.sync();
}

/** Opens `file` for appending, creating its folder, after cutting off a torn last line; returns its size. */
export async function openForAppend(file: string): Promise<{ handle: FileHandle; size: number }> {
  await mkdir(dirname(file), { recursive: true });
  const handle = await open(file, 'a');
  try {
    let { size } = await handle.stat();
    if (size > 0) size = await repairTornTail(file, handle, size);
    await syncDirectory(dirname(file));
    return { handle, size };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/** A crash mid-write can leave a partial last line; cut the file back to its last newline. Returns the new size. */
async function repairTornTail(file: string, appender: FileHandle, size: number): Promise<number> {
  const reader = await open(file, 'r');
  let keep = 0;
  try {
    const chunk = Buffer.alloc(Math.min(SCAN_CHUNK, size));
    let end = size;
    while (end > 0) {
      const length = Math.min(chunk.length, end);
      const { bytesRead } = await reader.read(chunk, 0, length, end - length);
      const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (newline !== -1) {
        keep = end - length + newline + 1;
        break;
      }
      end -= length;
    }
  } finally {
    await reader.close();
  }
  if (keep === size) return size;
  await appender.truncate(keep);
  await appender.sync();
  return keep;
}

/** Makes a new file's directory entry durable; best effort, as not every platform can (Windows). */
async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r').catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close().catch(() => undefined);
}
