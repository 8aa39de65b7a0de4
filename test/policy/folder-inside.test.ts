import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { folderInside } from '../../src/policy/folder-inside.js';

describe('folderInside', () => {
  const made: string[] = [];
  const temp = (): string => {
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-inside-')));
    made.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('makes the missing folders, and follows a symlink that stays inside', async () => {
    const base = temp();
    mkdirSync(path.join(base, 'real'));
    symlinkSync(path.join(base, 'real'), path.join(base, 'alias'));
    expect(await folderInside(base, ['a', 'b'])).toEqual({ ok: true, dir: path.join(base, 'a', 'b') });
    expect(await folderInside(base, ['alias', 'c'])).toEqual({ ok: true, dir: path.join(base, 'real', 'c') });
  });

  it('makes nothing through a symlink that leads outside', async () => {
    const base = temp();
    const outside = temp();
    symlinkSync(outside, path.join(base, 'out'));
    expect(await folderInside(base, ['out', 'deep', 'er'])).toEqual({ ok: false, outside });
    expect(existsSync(path.join(outside, 'deep'))).toBe(false);
    symlinkSync('/', path.join(base, 'root'));
    expect(await folderInside(base, ['root'])).toEqual({ ok: false, outside: '/' });
  });
});
