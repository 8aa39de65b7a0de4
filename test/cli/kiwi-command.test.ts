import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kiwiCommand } from '../../src/cli/kiwi-command.js';

describe('kiwiCommand', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-command-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'kiwi-gateway', 'dist', 'app', 'main.js');
  mkdirSync(path.dirname(script), { recursive: true });
  writeFileSync(script, '');
  chmodSync(script, 0o755);
  writeFileSync(path.join(dir, 'kiwi-gateway', 'package.json'), JSON.stringify({ name: 'kiwi-gateway' }));
  const user = path.join(dir, 'my project');
  mkdirSync(user);
  writeFileSync(path.join(user, 'package.json'), JSON.stringify({ name: 'my-app' }));

  it("says `node <main.js>` in a user's project, where `npx kiwi` would fetch npm's unrelated kiwi", () => {
    expect(kiwiCommand({ script, cwd: user, path: '/usr/bin' })).toBe(`node ${script}`);
    const spaced = path.join(user, 'main.js');
    expect(kiwiCommand({ script: spaced, cwd: user, path: undefined })).toBe(`node '${spaced}'`);
  });

  it('says `npx kiwi` in its own repository, and `kiwi` where the kiwi on PATH is this one', () => {
    expect(kiwiCommand({ script, cwd: path.join(dir, 'kiwi-gateway'), path: '/usr/bin' })).toBe('npx kiwi');
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(script, path.join(bin, 'kiwi'));
    expect(kiwiCommand({ script, cwd: user, path: ['/usr/bin', bin].join(path.delimiter) })).toBe('kiwi');
    // Another `kiwi` on PATH is not this one.
    const other = path.join(dir, 'other');
    mkdirSync(other);
    writeFileSync(path.join(other, 'kiwi'), '');
    expect(kiwiCommand({ script, cwd: user, path: other })).toBe(`node ${script}`);
  });
});
