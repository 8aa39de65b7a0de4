import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { walkIsStale, walkSecrets } from '../../src/primitives/secret-walk.js';

let root: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-walk-')));
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

function touch(...rels: string[]): void {
  for (const rel of rels) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), 'x');
  }
}

const found = (allow: string[][] = [[]], limits?: { maxDepth: number; maxEntries: number }) =>
  walkSecrets(root, allow, limits).entries.map((e) => `${path.relative(root, e.path)}${e.dir ? '/' : ''}`).sort();

describe('walkSecrets', () => {
  it("finds the project's secret locations, whole folders not entered, and skips dependency folders", () => {
    touch('.env', 'src/.env.local', 'src/app.ts', '.git/config', '.git/objects/ab/cd', '.ai/logs/audit/a.jsonl', '.ai/tools/t.yaml', 'keys/id_ed25519', 'node_modules/pkg/test/key.pem', 'venv/lib/site-packages/certifi/cacert.pem');
    expect(found()).toEqual(['.ai/logs/', '.env', '.git/', 'keys/id_ed25519', 'src/.env.local']);
  });

  it('leaves what every allow list names, and enters a masked folder only along a granted path', () => {
    touch('.env', '.git/config', '.git/HEAD', '.git/refs/heads/main');
    expect(found([['.env', '.git/config']])).toEqual(['.git/HEAD', '.git/refs/']);
    expect(found([['.env', '.git/**'], ['.env']])).toEqual(['.git/']);
    expect(found([['.git', '.git/**']])).toEqual(['.env']);
  });

  it('masks a partly granted folder whole when the bound cuts the walk inside it', () => {
    touch('.git/config', ...Array.from({ length: 20 }, (_, i) => `.git/loose-${i}`));
    expect(found([['.git/config']], { maxDepth: 12, maxEntries: 10 })).toEqual(['.git/']);
    const walk = walkSecrets(root, [[]], { maxDepth: 1, maxEntries: 100 });
    expect(walk.truncated).toBe(false);
    touch('a/b/c/.env');
    expect(walkSecrets(root, [[]], { maxDepth: 1, maxEntries: 100 }).truncated).toBe(true);
  });

  it('reports a symlinked secret without following a symlinked folder', () => {
    touch('real/.env');
    symlinkSync(path.join(root, 'real', '.env'), path.join(root, '.env'));
    symlinkSync(path.join(root, 'real'), path.join(root, 'link'));
    expect(found()).toEqual(['.env', 'real/.env']);
  });

  it('goes stale when an entry appears in a folder it read', () => {
    touch('src/deep/app.ts');
    const walk = walkSecrets(root, [[]]);
    expect(walkIsStale(walk)).toBe(false);
    touch('src/deep/.env');
    expect(walkIsStale(walk)).toBe(true);
  });
});
