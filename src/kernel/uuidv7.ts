import { randomFillSync } from 'node:crypto';

/** Random bytes drawn a page at a time: one `randomBytes(16)` per id was a measurable share of a loaded gateway's CPU. */
const pool = Buffer.allocUnsafe(4096);
let used = pool.length;
const id = Buffer.allocUnsafe(16);

/** A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits; ids sort by creation time. */
export function uuidv7(nowMs: number = Date.now()): string {
  if (used + 10 > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  id.writeUIntBE(nowMs, 0, 6);
  pool.copy(id, 6, used, used + 10);
  used += 10;
  id[6] = ((id[6] as number) & 0x0f) | 0x70;
  id[8] = ((id[8] as number) & 0x3f) | 0x80;
  const h = id.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
