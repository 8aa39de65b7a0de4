import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCheckpointSettings } from '../../src/checkpoints/checkpoint-config.js';
import { loadGatewayConfig } from '../../src/app/gateway-config.js';
import { listCheckpoints, takeCheckpoint } from '../../src/checkpoints/checkpoint-store.js';
import { createCheckpointer } from '../../src/checkpoints/checkpointer.js';
import { findWorkTree, type WorkTree } from '../../src/checkpoints/git-work-tree.js';
import { createGitRepo, type GitRepo } from '../helpers/git-repo.js';

const LIMITS = { maxFileBytes: 64 * 1024, maxTotalBytes: 1024 * 1024, timeoutMs: 20_000 };
const META = { tool: 'write_file', callId: 'call-1', session: 'test-session' };

let repo: GitRepo | undefined;
afterEach(() => {
  repo?.remove();
  repo = undefined;
});

async function workTree(r: GitRepo, root = r.root): Promise<WorkTree> {
  const found = await findWorkTree(root, { env: r.env, timeoutMs: 20_000 });
  if (!found.found) throw new Error(found.reason);
  return found.tree;
}

/** Everything of the user's that a checkpoint must leave as it was. */
function userState(r: GitRepo): Record<string, string> {
  return {
    head: r.git('rev-parse', 'HEAD'),
    branch: r.git('symbolic-ref', 'HEAD'),
    refs: r.git('for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads', 'refs/tags', 'refs/stash'),
    stash: r.git('stash', 'list'),
    staged: r.git('diff', '--cached'),
    index: createHash('sha256').update(readFileSync(path.join(r.root, '.git', 'index'))).digest('hex'),
  };
}

describe('takeCheckpoint', () => {
  it("commits tracked and untracked files onto its own ref, leaving HEAD, branches, stash and the user's index as they were", async () => {
    repo = createGitRepo({ 'a.txt': 'a1\n', 'b.txt': 'b1\n', '.gitignore': 'ignored.log\nbuild/\n', 'proj/.keep': '' });
    const r = repo;
    r.write('stashed.txt', 'x\n');
    r.git('add', 'stashed.txt');
    r.git('stash', 'push', '-q', '-m', 'users stash');
    r.write('a.txt', 'a2 staged\n');
    r.git('add', 'a.txt');
    r.write('b.txt', 'b2 unstaged\n');
    r.write('new.txt', 'untracked\n');
    r.write('ignored.log', 'ignored\n');
    r.write('build/out.bin', 'ignored too\n');
    r.write('proj/.ai/logs/audit/x.jsonl', '{}\n');
    r.write('proj/.ai/state/db', 'state\n');
    const before = userState(r);

    // The project is a folder inside the repository: the checkpoint covers the whole work tree
    // but leaves out that project's generated state.
    const wt = await workTree(r, path.join(r.root, 'proj'));
    expect(wt).toMatchObject({ top: r.root, ref: 'refs/kiwi/checkpoints/main' });
    const first = await takeCheckpoint(wt, META, LIMITS);
    expect(first.status).toBe('created');
    if (first.status !== 'created') return;

    expect(userState(r)).toEqual(before);
    expect(r.git('diff', '--cached', '--name-only').trim()).toBe('a.txt');
    const files = r.git('ls-tree', '-r', '--name-only', first.id).trim().split('\n');
    expect(files.sort()).toEqual(['.gitignore', 'a.txt', 'b.txt', 'new.txt', 'proj/.keep']);
    expect(r.git('show', `${first.id}:a.txt`)).toBe('a2 staged\n');
    expect(r.git('show', `${first.id}:b.txt`)).toBe('b2 unstaged\n');
    expect(r.git('rev-parse', 'refs/kiwi/checkpoints/main').trim()).toBe(first.id);
    expect(r.git('log', '-1', '--format=%an <%ae>%n%B', first.id)).toMatch(/^Kiwi Gateway <kiwi-gateway@localhost>\ncheckpoint before write_file\n\nKiwi-Tool: write_file\nKiwi-Call: call-1\nKiwi-Session: test-session\nKiwi-Time: \d{4}-/);

    // Nothing changed: no new commit, and the answer is the checkpoint that already holds this state.
    r.write('proj/.ai/logs/audit/x.jsonl', '{}\n{}\n');
    expect(await takeCheckpoint(wt, { ...META, callId: 'call-2' }, LIMITS)).toEqual({ status: 'unchanged', id: first.id, tree: first.tree });

    r.write('b.txt', 'b3\n');
    const second = await takeCheckpoint(wt, { ...META, callId: 'call-3' }, LIMITS);
    expect(second.status).toBe('created');
    if (second.status !== 'created') return;
    expect(r.git('rev-parse', `${second.id}^`).trim()).toBe(first.id);
    expect(userState(r)).toEqual(before);
    expect(r.git('diff', '--cached', '--name-only').trim()).toBe('a.txt');

    const list = await listCheckpoints(wt, 10);
    expect(list.map((c) => [c.id, c.callId, c.filesChanged])).toEqual([
      [second.id, 'call-3', 1],
      [first.id, 'call-1', undefined],
    ]);
  });

  it("never rewrites the user's index file, whatever GIT_* variables the gateway's environment holds", async () => {
    repo = createGitRepo({ 'a.txt': 'a\n' });
    repo.write('a.txt', 'changed\n');
    const index = path.join(repo.root, '.git', 'index');
    const bytes = readFileSync(index);
    const found = await findWorkTree(repo.root, { env: { ...repo.env, GIT_INDEX_FILE: index, GIT_DIR: path.join(repo.home, 'elsewhere') }, timeoutMs: 20_000 });
    if (!found.found) throw new Error(found.reason);
    const wt = found.tree;
    await takeCheckpoint(wt, META, LIMITS);
    await takeCheckpoint(wt, META, LIMITS);
    expect(readFileSync(index).equals(bytes)).toBe(true);
  });

  it('leaves out generated state that .gitignore already ignores (git add refuses to be told to exclude it)', async () => {
    repo = createGitRepo({ '.gitignore': '.ai/logs/\n' });
    const wt = await workTree(repo);
    expect((await takeCheckpoint(wt, META, LIMITS)).status).toBe('created');
    repo.write('.ai/logs/audit/day/s.jsonl', '{}\n');
    repo.write('.ai/state/db', 'x\n');
    repo.write('work.txt', 'w\n');
    const out = await takeCheckpoint(wt, META, LIMITS);
    expect(out.status).toBe('created');
    if (out.status === 'created') expect(repo.git('ls-tree', '-r', '--name-only', out.id).trim().split('\n').sort()).toEqual(['.gitignore', 'work.txt']);
  });

  it('never stores a secret path, tracked or untracked, nor hashes its contents into git objects (issue 22)', async () => {
    repo = createGitRepo({ 'app.txt': 'app\n', '.env': 'COMMITTED=by-the-user\n' });
    const r = repo;
    r.write('.env', 'API_KEY=sk-live-changed\n');
    r.write('sub/.env.local', 'TOKEN=sk-live-untracked\n');
    r.write('keys/id_ed25519', 'PRIVATE KEY\n');
    r.write('certs/server.pem', 'CERT\n');
    r.write('.npmrc', '//registry.npmjs.org/:_authToken=npm_secret\n');
    r.write('work.txt', 'w\n');
    const out = await takeCheckpoint(await workTree(r), META, LIMITS);
    expect(out.status).toBe('created');
    if (out.status !== 'created') return;
    expect(r.git('ls-tree', '-r', '--name-only', out.id).trim().split('\n').sort()).toEqual(['app.txt', 'work.txt']);
    expect(() => r.git('show', 'refs/kiwi/checkpoints/main:.env')).toThrow(/does not exist|exists on disk, but not in/);
    for (const text of ['API_KEY=sk-live-changed\n', 'TOKEN=sk-live-untracked\n', 'PRIVATE KEY\n', '//registry.npmjs.org/:_authToken=npm_secret\n']) {
      const blob = createHash('sha1').update(`blob ${Buffer.byteLength(text)}\0${text}`).digest('hex');
      expect(() => r.git('cat-file', '-e', blob), `the blob of ${JSON.stringify(text)} was written`).toThrow();
    }
    // The user's own files are as they were: only the checkpoint leaves them out.
    expect(readFileSync(path.join(r.root, '.env'), 'utf8')).toBe('API_KEY=sk-live-changed\n');
    expect(r.git('status', '--porcelain')).toContain(' M .env');
  });

  it('works on a branch with no commit yet', async () => {
    const base = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-git-empty-')));
    try {
      const env = { PATH: process.env['PATH'], HOME: base };
      const { execFileSync } = await import('node:child_process');
      execFileSync('git', ['init', '-q', base], { env: { ...env, GIT_CONFIG_NOSYSTEM: '1' } });
      writeFileSync(path.join(base, 'first.txt'), 'x\n');
      const found = await findWorkTree(base, { env, timeoutMs: 20_000 });
      expect(found.found).toBe(true);
      if (!found.found) return;
      const out = await takeCheckpoint(found.tree, META, LIMITS);
      expect(out.status).toBe('created');
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('skips, saying which file, when a changed file is over the size limit, and leaves the ref alone', async () => {
    repo = createGitRepo();
    const wt = await workTree(repo);
    const first = await takeCheckpoint(wt, META, LIMITS);
    repo.write('dump.bin', 'x'.repeat(LIMITS.maxFileBytes + 1));
    const out = await takeCheckpoint(wt, META, LIMITS);
    expect(out).toEqual({ status: 'skipped', reason: expect.stringContaining('dump.bin is 65537 bytes, over the 65536 bytes a checkpoint copies per file (checkpoints.max_file_bytes)') });
    expect(repo.git('rev-parse', 'refs/kiwi/checkpoints/main').trim()).toBe(first.status === 'created' ? first.id : '');
    repo.write('.gitignore', 'dump.bin\n');
    expect((await takeCheckpoint(wt, META, LIMITS)).status).toBe('created');
  });

  it('gives a linked work tree a ref of its own', async () => {
    repo = createGitRepo();
    const linked = path.join(path.dirname(repo.root), 'linked');
    repo.git('worktree', 'add', '-q', linked);
    const wt = await workTree(repo, linked);
    expect(wt.ref).toBe('refs/kiwi/checkpoints/worktrees/linked');
    expect((await takeCheckpoint(wt, META, LIMITS)).status).toBe('created');
    expect(repo.git('for-each-ref', '--format=%(refname)', 'refs/kiwi').trim()).toBe('refs/kiwi/checkpoints/worktrees/linked');
  });
});

describe('findWorkTree and the checkpointer outside git', () => {
  it('says a folder outside git is not a work tree, without a warning, and takes no checkpoint', async () => {
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-nogit-')));
    try {
      const found = await findWorkTree(dir, { env: { PATH: process.env['PATH'] }, timeoutMs: 5000 });
      expect(found).toEqual({ found: false, reason: `${dir} is not in a git work tree` });
      const warnings: string[] = [];
      const cp = createCheckpointer({ root: dir, env: { PATH: process.env['PATH'] }, settings: { enabled: true, ...LIMITS }, onWarning: (m) => warnings.push(m) });
      expect(await cp.before(META)).toBeUndefined();
      expect(await cp.status()).toEqual({ on: false, reason: `${dir} is not in a git work tree` });
      expect(warnings).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('warns once when git is missing, and the call goes on without a checkpoint', async () => {
    repo = createGitRepo();
    const warnings: string[] = [];
    const empty = path.join(repo.home, 'empty-bin');
    mkdirSync(empty);
    const cp = createCheckpointer({ root: repo.root, env: { PATH: empty, HOME: repo.home }, settings: { enabled: true, ...LIMITS }, onWarning: (m) => warnings.push(m) });
    expect(await cp.before(META)).toBeUndefined();
    expect(await cp.before(META)).toBeUndefined();
    expect(warnings).toEqual(['checkpoints are off: git is not installed (not found on PATH)']);
  });

  it('warns once per reason when a checkpoint is skipped for a limit', async () => {
    repo = createGitRepo();
    const warnings: string[] = [];
    repo.write('big.bin', 'x'.repeat(LIMITS.maxFileBytes + 1));
    const cp = createCheckpointer({ root: repo.root, env: repo.env, settings: { enabled: true, ...LIMITS }, onWarning: (m) => warnings.push(m) });
    expect(await cp.before(META)).toBeUndefined();
    expect(await cp.before(META)).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('no checkpoint before write_file');
    expect(warnings[0]).toContain('big.bin');
  });
});

describe('readCheckpointSettings', () => {
  it('reads the checkpoints section of gateway.yaml, defaults without it, and names the line of a mistake', async () => {
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-ckcfg-')));
    try {
      const file = path.join(dir, 'gateway.yaml');
      expect(await readCheckpointSettings(file, dir)).toEqual({ enabled: true, maxFileBytes: 50 * 1024 * 1024, maxTotalBytes: 200 * 1024 * 1024, timeoutMs: 10_000 });
      writeFileSync(file, 'port: 9000\ncheckpoints:\n  enabled: false\n  timeout_ms: 2000\n');
      expect(await readCheckpointSettings(file, dir)).toMatchObject({ enabled: false, timeoutMs: 2000 });
      writeFileSync(file, 'checkpoints:\n  enabled: false\n  max_file_mb: 3\n');
      await expect(readCheckpointSettings(file, dir)).rejects.toThrow(/^gateway\.yaml:3:3: checkpoints\.max_file_mb: unknown field/);
      writeFileSync(file, 'checkpoints:\n  enabled: "no"\n');
      await expect(readCheckpointSettings(file, dir)).rejects.toThrow('gateway.yaml:2:12: checkpoints.enabled: must be true or false');
      // `kiwi serve` checks the section with the rest of the file.
      writeFileSync(file, 'checkpoints:\n  enable: false\n');
      await expect(loadGatewayConfig(file, { env: {}, root: dir })).rejects.toThrow('gateway.yaml:2:3: checkpoints.enable: unknown field (did you mean "enabled"?)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
