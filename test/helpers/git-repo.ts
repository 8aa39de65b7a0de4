import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface GitRepo {
  root: string;
  /** A home folder with no git config at all (no identity): what checkpoints must cope with. */
  home: string;
  /** The environment a user with no git identity would give the gateway. */
  env: Record<string, string | undefined>;
  /** Runs git in the repository as the user would (with an identity for their own commits). */
  git(...args: string[]): string;
  write(relative: string, text: string): string;
  remove(): void;
}

/** A throwaway git repository with one commit, outside any other repository. */
export function createGitRepo(files: Record<string, string> = { 'README.md': 'hello\n' }): GitRepo {
  const base = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-git-')));
  const root = path.join(base, 'repo');
  const home = path.join(base, 'home');
  mkdirSync(root);
  mkdirSync(home);
  const userEnv = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'Test User',
    GIT_AUTHOR_EMAIL: 'user@example.com',
    GIT_COMMITTER_NAME: 'Test User',
    GIT_COMMITTER_EMAIL: 'user@example.com',
  };
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: root, env: userEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const write = (relative: string, text: string): string => {
    const file = path.join(root, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    return file;
  };
  git('init', '-q', '-b', 'main');
  for (const [name, text] of Object.entries(files)) write(name, text);
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  return { root, home, env: { PATH: userEnv.PATH, HOME: home }, git, write, remove: () => rmSync(base, { recursive: true, force: true }) };
}
