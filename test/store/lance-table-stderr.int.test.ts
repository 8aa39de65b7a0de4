import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * LanceDB's own logger writes to the process's stderr, past anything this process could capture,
 * so the table is made in a child process of its own and its stderr read whole: a first start
 * (and every test that builds an index) printed a WARN line per table made.
 */
const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-lance-stderr-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a fresh LanceDB table', () => {
  it('is made without a word on stderr', async () => {
    const module = pathToFileURL(path.join(REPO_ROOT, 'src', 'store', 'lance-table.ts')).href;
    const script = `import { connectStore, createFreshTable } from ${JSON.stringify(module)};
const db = await connectStore(${JSON.stringify(dir)});
const table = await createFreshTable(db, ${JSON.stringify(dir)}, 'tools', 4);
process.stdout.write(String(await table.count()));`;
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, timeout: 60_000 });
    expect(stdout).toBe('0');
    expect(stderr).toBe('');
  }, 60_000);
});
