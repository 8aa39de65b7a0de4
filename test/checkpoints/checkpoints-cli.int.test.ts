import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeCheckpoint } from '../../src/checkpoints/checkpoint-store.js';
import { findWorkTree } from '../../src/checkpoints/git-work-tree.js';
import { runCli } from '../../src/app/run-cli.js';
import { createGitRepo, type GitRepo } from '../helpers/git-repo.js';

let repo: GitRepo;
let first: string;

async function kiwi(cwd: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env: repo.env, cwd, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const read = (name: string): string | undefined => (existsSync(path.join(repo.root, name)) ? readFileSync(path.join(repo.root, name), 'utf8') : undefined);

beforeAll(async () => {
  repo = createGitRepo({ 'a.txt': 'a1\n', 'b.txt': 'b1\n', 'keep/k.txt': 'k\n', '.gitignore': 'ignored.log\n' });
});

afterAll(() => repo.remove());

describe('kiwi checkpoints', () => {
  it('refuses clearly outside git', async () => {
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-nogit-cli-')));
    try {
      const r = await kiwi(dir, 'checkpoints', 'list');
      expect(r).toMatchObject({ code: 1, err: `kiwi checkpoints: INVALID_INPUT: ${dir} is not in a git work tree: checkpoints are taken only in a git project (\`git init\` makes one)` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says there are none yet', async () => {
    expect(await kiwi(repo.root, 'checkpoints', 'list')).toMatchObject({ code: 0, out: '', err: expect.stringContaining(`no checkpoints in ${repo.root} yet`) });
    expect(await kiwi(repo.root, 'checkpoints', 'diff', 'abcd')).toMatchObject({ code: 1, err: `kiwi checkpoints: NOT_FOUND: there are no checkpoints in ${repo.root} yet` });
  });

  it('lists a checkpoint, newest first, with its time, tool, call and files changed', async () => {
    repo.write('b.txt', 'b2 staged\n');
    repo.git('add', 'b.txt');
    const found = await findWorkTree(repo.root, { env: repo.env, timeoutMs: 20_000 });
    if (!found.found) throw new Error(found.reason);
    const taken = await takeCheckpoint(found.tree, { tool: 'write_file', callId: 'call-7', session: 's1', time: new Date('2030-01-02T03:04:05Z') }, { maxFileBytes: 1 << 20, maxTotalBytes: 1 << 24, timeoutMs: 20_000 });
    if (taken.status !== 'created') throw new Error(taken.status);
    first = taken.id;
    const r = await kiwi(repo.root, 'checkpoints', 'list');
    expect(r).toMatchObject({ code: 0, out: `${first.slice(0, 12)}  2030-01-02T03:04:05.000Z  write_file  call call-7  first checkpoint` });
    const json = await kiwi(repo.root, 'checkpoints', 'list', '--json');
    expect(JSON.parse(json.out)).toEqual([{ id: first, time: '2030-01-02T03:04:05.000Z', tool: 'write_file', callId: 'call-7', session: 's1' }]);
  });

  it('diffs a checkpoint against the work tree as it is now, including new untracked files but not ignored ones', async () => {
    unlinkSync(path.join(repo.root, 'a.txt'));
    repo.write('b.txt', 'b3 unstaged\n');
    repo.write('c.txt', 'created after\n');
    repo.write('dir/deep/new.txt', 'created after\n');
    repo.write('ignored.log', 'never touched\n');
    const stat = await kiwi(repo.root, 'checkpoints', 'diff', first.slice(0, 8), '--stat');
    expect(stat.code).toBe(0);
    expect(stat.out).toMatch(/a\.txt .*\n.*b\.txt .*\n.*c\.txt .*\n.*dir\/deep\/new\.txt .*\n 4 files changed/);
    expect(stat.out).not.toContain('ignored.log');
    const patch = await kiwi(repo.root, 'checkpoints', 'diff', first);
    expect(patch.out).toContain('-b2 staged\n+b3 unstaged');
    expect(await kiwi(repo.root, 'checkpoints', 'diff', first, '--parent')).toMatchObject({ code: 1, err: expect.stringContaining('is the first checkpoint: it has no earlier one to compare with') });
  });

  it('shows a dry run without changing anything', async () => {
    const r = await kiwi(repo.root, 'checkpoints', 'restore', first, '--dry-run');
    expect(r.code).toBe(0);
    expect(r.out.split('\n').sort()).toEqual(['would remove  c.txt', 'would remove  dir/deep/new.txt', 'would restore  a.txt', 'would restore  b.txt']);
    expect(read('c.txt')).toBe('created after\n');
    expect(read('a.txt')).toBeUndefined();
  });

  it("restores deleted and modified files and removes created ones, leaving ignored files, HEAD, branch and the user's index alone, and can be undone", async () => {
    const head = repo.git('rev-parse', 'HEAD');
    const staged = repo.git('diff', '--cached');
    const r = await kiwi(repo.root, 'checkpoints', 'restore', first);
    expect(r.code).toBe(0);
    expect(read('a.txt')).toBe('a1\n');
    expect(read('b.txt')).toBe('b2 staged\n');
    expect(read('c.txt')).toBeUndefined();
    expect(existsSync(path.join(repo.root, 'dir'))).toBe(false);
    expect(read('keep/k.txt')).toBe('k\n');
    expect(read('ignored.log')).toBe('never touched\n');
    expect(repo.git('rev-parse', 'HEAD')).toBe(head);
    expect(repo.git('symbolic-ref', 'HEAD').trim()).toBe('refs/heads/main');
    expect(repo.git('diff', '--cached')).toBe(staged);
    expect(repo.git('stash', 'list')).toBe('');

    const undo = /Undo: kiwi checkpoints restore ([0-9a-f]{12})$/.exec(r.err)?.[1];
    expect(undo).toBeDefined();
    const list = await kiwi(repo.root, 'checkpoints', 'list');
    expect(list.out.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${undo}  \\S+  kiwi checkpoints restore ${first.slice(0, 12)}  call \\S+  4 files changed since the one before$`)),
      expect.stringMatching(new RegExp(`^${first.slice(0, 12)}  `)),
    ]);

    expect((await kiwi(repo.root, 'checkpoints', 'restore', undo as string)).code).toBe(0);
    expect(read('a.txt')).toBeUndefined();
    expect(read('b.txt')).toBe('b3 unstaged\n');
    expect(read('c.txt')).toBe('created after\n');
    expect(read('dir/deep/new.txt')).toBe('created after\n');
    expect(repo.git('diff', '--cached')).toBe(staged);
  });

  it('refuses ids that are not checkpoints, with what to give instead', async () => {
    expect(await kiwi(repo.root, 'checkpoints', 'restore', 'HEAD')).toMatchObject({ code: 1, err: expect.stringContaining('`HEAD` is not a checkpoint id: give the hex id') });
    expect(await kiwi(repo.root, 'checkpoints', 'restore', 'deadbeef')).toMatchObject({ code: 1, err: expect.stringContaining('no checkpoint deadbeef in') });
    const head = repo.git('rev-parse', 'HEAD').trim();
    expect(await kiwi(repo.root, 'checkpoints', 'diff', head)).toMatchObject({ code: 1, err: expect.stringContaining('is a commit but not a checkpoint') });
    expect(await kiwi(repo.root, 'checkpoints', 'restore')).toMatchObject({ code: 2, err: expect.stringContaining('give the checkpoint id') });
    expect(await kiwi(repo.root, 'checkpoints', 'undo')).toMatchObject({ code: 2, err: expect.stringContaining('unknown action `undo`') });
  });
});
