import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const REPO = path.resolve(import.meta.dirname, '../..');

export interface TempProject {
  root: string;
  write(relative: string, text: string): string;
  remove(): void;
}

/**
 * A throwaway project with the repository's primitives and runtimes, so tests run real tool
 * chains without touching the demo `.ai/`. `node_modules` is linked so MCP servers from npm resolve.
 */
export function createTempProject(): TempProject {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-project-')));
  mkdirSync(path.join(root, '.ai', 'tools'), { recursive: true });
  cpSync(path.join(REPO, '.ai', 'tools', 'primitives'), path.join(root, '.ai', 'tools', 'primitives'), { recursive: true });
  cpSync(path.join(REPO, '.ai', 'tools', 'runtimes'), path.join(root, '.ai', 'tools', 'runtimes'), { recursive: true });
  return {
    root,
    write(relative, text) {
      const file = path.join(root, relative);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
      return file;
    },
    remove() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export const FIXTURES = path.join(REPO, 'test', 'fixtures');
export const REPO_ROOT = REPO;
