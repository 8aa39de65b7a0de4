import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readCappedFile } from '../../src/base/read-capped-file.js';

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-capped-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tooLarge = (size: number) => new Error(`too large: ${size}`);

describe('readCappedFile', () => {
  it('reads a file at the cap whole, refuses one byte over with the caller\'s error, and passes a missing file\'s error through', async () => {
    const at = path.join(dir, 'at.txt');
    writeFileSync(at, 'x'.repeat(16));
    expect((await readCappedFile(at, 16, tooLarge)).toString()).toBe('x'.repeat(16));
    const over = path.join(dir, 'over.txt');
    writeFileSync(over, 'x'.repeat(17));
    await expect(readCappedFile(over, 16, tooLarge)).rejects.toThrow('too large: 17');
    await expect(readCappedFile(path.join(dir, 'none.txt'), 16, tooLarge)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
