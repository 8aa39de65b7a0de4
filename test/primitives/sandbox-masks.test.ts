import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSecretMasks } from '../../src/primitives/sandbox-masks.js';

/**
 * What a tool that reads `.git` (the git tools, by `sandbox.secrets`) gets of a masked `.ai/`
 * folder: its tracked files, so that git sees no phantom deletion, and never what a tracked link
 * points at, which a bind would show.
 */
describe('the masks of a tool that reads .git', () => {
  const base = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-masks-')));
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  const root = path.join(base, 'project');
  const outside = path.join(base, 'outside-secret.txt');
  writeFileSync(outside, 'not for tools\n');
  mkdirSync(path.join(root, '.ai', 'config'), { recursive: true });
  writeFileSync(path.join(root, '.ai', 'config', 'policy.yaml'), 'version: 1\n');
  writeFileSync(path.join(root, '.ai', 'config', 'notes.yaml'), 'a: 1\n');
  symlinkSync(outside, path.join(root, '.ai', 'config', 'link.yaml'));
  writeFileSync(path.join(root, '.ai', 'config', 'untracked.yaml'), 'b: 2\n');
  const git = (...args: string[]) => execFileSync('git', ['-C', root, '-c', 'user.name=kiwi', '-c', 'user.email=kiwi@example.invalid', ...args], { stdio: 'ignore' });
  git('init', '-q');
  git('add', '.ai/config/policy.yaml', '.ai/config/notes.yaml', '.ai/config/link.yaml');
  git('commit', '-qm', 'tracked');
  writeFileSync(path.join(root, '.ai', 'config', 'notes.yaml'), 'a: 2\n');

  it('shows the tracked files of a masked folder, a changed one as the empty file, and no link nor untracked file', () => {
    const masks = createSecretMasks();
    const args = masks.args({ project: { root, allow: [['.git', '.git/**']] }, keep: [root] });
    const folder = path.join(root, '.ai', 'config');
    const at = args.indexOf(folder);
    expect(args.slice(at - 1, at + 1)).toEqual(['--tmpfs', folder]);
    const binds = new Map<string, string>();
    for (let i = at + 1; args[i] === '--ro-bind'; i += 3) binds.set(args[i + 2] ?? '', args[i + 1] ?? '');
    const policy = path.join(folder, 'policy.yaml');
    const notes = path.join(folder, 'notes.yaml');
    expect([...binds.keys()].sort()).toEqual([notes, policy]);
    expect(binds.get(policy)).toBe(policy);
    expect(binds.get(notes)).not.toBe(notes);
    expect(args.join(' ')).not.toContain(outside);
    expect(args.join(' ')).not.toContain('link.yaml');
  });

  it('masks the folder whole for a tool that cannot read .git', () => {
    const args = createSecretMasks().args({ project: { root, allow: [[]] }, keep: [root] });
    expect(args.join(' ')).not.toContain('policy.yaml');
  });
});
