import type { FileHandle } from 'node:fs/promises';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';

/**
 * An audit file read backwards, newest line first: the tail (`kiwi audit tail`) and the admin
 * API's pages (file-audit-query.ts) start at the end, or where the last page stopped, and read
 * only as far back as they need. Each line says where it starts, so a reader can stop anywhere
 * and go on from there later.
 */

export type TailLine = ({ kind: 'line'; text: string } | { kind: 'torn' } | { kind: 'oversized' }) & {
  /** The byte offset of the line's first byte in the file. */
  start: number;
};

const CHUNK = 64 * 1024;

/**
 * Lines of the file's first `size` bytes, from last to first, read in chunks; memory is bounded
 * by `maxLineBytes`. A fragment after the last newline is `torn` (a crash, or a write in
 * progress); a line longer than `maxLineBytes` is `oversized`, its text never held.
 */
export async function* linesFromEnd(handle: FileHandle, size: number, maxLineBytes: number, signal?: AbortSignal): AsyncGenerator<TailLine> {
  // `carry` holds the start-unknown fragment after the newest newline seen so far.
  let carry: Buffer[] = [];
  let carryBytes = 0;
  let atTail = true; // the fragment is after the file's last newline: a torn line if non-empty
  let oversized = false;
  const finish = (head: Buffer, start: number): TailLine | undefined => {
    const wasTail = atTail;
    const wasOversized = oversized;
    const bytes = carryBytes + head.length;
    const parts = [head, ...carry];
    carry = [];
    carryBytes = 0;
    atTail = false;
    oversized = false;
    if (wasTail) return bytes > 0 ? { kind: 'torn', start } : undefined;
    if (wasOversized || bytes > maxLineBytes) return { kind: 'oversized', start };
    return { kind: 'line', text: Buffer.concat(parts).toString('utf8'), start };
  };
  let position = size;
  const chunk = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
  while (position > 0) {
    throwIfAborted(signal, 'reading the audit log');
    const length = Math.min(chunk.length, position);
    position -= length;
    await readExactly(handle, chunk, length, position);
    let end = length;
    let newline = chunk.lastIndexOf(0x0a, end - 1);
    while (newline !== -1 && newline < end) {
      const line = finish(chunk.subarray(newline + 1, end), position + newline + 1);
      if (line) yield line;
      end = newline;
      newline = end === 0 ? -1 : chunk.lastIndexOf(0x0a, end - 1);
    }
    if (end > 0 && !oversized) {
      carry.unshift(Buffer.from(chunk.subarray(0, end)));
      carryBytes += end;
      if (carryBytes > maxLineBytes && !atTail) {
        oversized = true;
        carry = [];
      }
      if (atTail && carryBytes > maxLineBytes) carry = [];
    }
  }
  const first = finish(Buffer.alloc(0), 0);
  if (first) yield first;
}

async function readExactly(handle: FileHandle, buffer: Buffer, length: number, position: number): Promise<void> {
  let offset = 0;
  while (offset < length) {
    const { bytesRead } = await handle.read(buffer, offset, length - offset, position + offset);
    if (bytesRead === 0) throw new KiwiError('INTERNAL', 'an audit file shrank while it was being read: read it again');
    offset += bytesRead;
  }
}
