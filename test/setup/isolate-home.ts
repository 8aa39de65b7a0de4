import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/**
 * Every test file runs with a HOME of its own: an empty folder, removed after the file. Kiwi reads
 * the user tier from `~/.ai` (and git, npm and others read their files there), so a suite run with
 * the account's own HOME saw whatever `kiwi registry push` had once put there, and failed on a
 * developer's machine only; one HOME shared by the run would let one file's pushes reach another.
 * Processes a test starts inherit it.
 */
const account = homedir();
const home = mkdtempSync(path.join(tmpdir(), 'kiwi-test-home-'));
process.env['HOME'] = home;
// Rootless podman keeps its images under the data home; a fresh one would rebuild the sandbox
// image for every file. Nothing of Kiwi's lives there.
process.env['XDG_DATA_HOME'] ??= path.join(account, '.local', 'share');

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});
