import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isKiwiError, type KiwiError } from '../../src/base/errors.js';
import { PROCESS_TREE_MARKER_ENV } from '../../src/primitives/process-tree.js';
import { buildChildEnv, runSubprocess, type SubprocessRequest } from '../../src/primitives/subprocess.js';

const fixtures = fileURLToPath(new URL('../fixtures/subprocess/', import.meta.url));
const fixture = (name: string): string => join(fixtures, name);
const node = process.execPath;
const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

let dir: string;
const spawnedPids: number[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kiwi-subprocess-'));
});

afterEach(async () => {
  // Belt and braces: if a test failed half way, nothing it started may outlive it.
  for (const pid of spawnedPids.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

function request(overrides: Partial<SubprocessRequest> & Pick<SubprocessRequest, 'argv'>): SubprocessRequest {
  return { cwd: dir, env: baseEnv, timeoutMs: 15_000, maxOutputBytes: 1024 * 1024, ...overrides };
}

/** Alive means /proc/<pid> exists and is not a zombie (an exited process its parent has not reaped). */
function isRunning(pid: number): boolean {
  if (process.platform !== 'linux') {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function readPids(file: string): Promise<number[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const pids = text.split('\n').filter(Boolean).map(Number);
  spawnedPids.push(...pids);
  return pids;
}

/** Waits for an observable condition (a file the child writes), never for a fixed time. */
async function waitFor(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function rejection(promise: Promise<unknown>): Promise<KiwiError> {
  try {
    await promise;
  } catch (error) {
    if (isKiwiError(error)) return error;
    throw error;
  }
  throw new Error('expected the call to throw a KiwiError');
}

describe('runSubprocess: arguments are passed verbatim, never through a shell', () => {
  it('prints back arguments with spaces, quotes and shell syntax unchanged and runs none of it', async () => {
    const args = ['with space', `"double" and 'single'`, 'git; rm -rf ~', '$(touch CANARY)', '`touch CANARY`', '*', '', 'a\nb', 'ünïcödé'];
    const result = await runSubprocess(request({ argv: [node, fixture('echo.mjs'), ...args] }));
    expect(result.exitCode).toBe(0);
    expect(result.signal).toBeNull();
    const printed = JSON.parse(result.stdout) as { argv: string[]; cwd: string };
    expect(printed.argv).toEqual(args);
    expect(printed.cwd).toBe(dir);
    expect(existsSync(join(dir, 'CANARY'))).toBe(false);
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('passes stdin through and ends it', async () => {
    const result = await runSubprocess(request({ argv: [node, fixture('echo.mjs')], stdin: 'line one\nline "two" $(x)\n' }));
    expect((JSON.parse(result.stdout) as { stdin: string }).stdin).toBe('line one\nline "two" $(x)\n');
  });

  it('ends stdin at once when none is given, so a reader sees EOF', async () => {
    const result = await runSubprocess(request({ argv: ['cat'] }));
    expect(result).toMatchObject({ exitCode: 0, stdout: '' });
  });

  it('returns a non-zero exit as a result, with stderr', async () => {
    const result = await runSubprocess(request({ argv: [node, '-e', 'console.error("boom"); process.exit(3)'] }));
    expect(result).toMatchObject({ exitCode: 3, signal: null, stderr: 'boom\n' });
  });

  it('returns death by a signal as a result', async () => {
    const result = await runSubprocess(request({ argv: [node, '-e', 'process.kill(process.pid, "SIGTERM")'] }));
    expect(result).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
  });
});

describe('runSubprocess: environment', () => {
  it('shows the child only what the allowlist lets through', async () => {
    const source = { ...baseEnv, KIWI_TEST_SECRET: 'hunter2', KIWI_OK_ONE: '1', KIWI_OK_TWO: '2', EXACT_NAME: 'e', EXACT_NAME_LONGER: 'no' };
    const env = buildChildEnv(source, ['KIWI_OK_*', 'EXACT_NAME'], { ADDED: 'yes' });
    const result = await runSubprocess(request({ argv: [node, fixture('echo.mjs')], env }));
    const seen = (JSON.parse(result.stdout) as { env: Record<string, string> }).env;
    expect(seen).toMatchObject({ KIWI_OK_ONE: '1', KIWI_OK_TWO: '2', EXACT_NAME: 'e', ADDED: 'yes' });
    expect(seen).not.toHaveProperty('KIWI_TEST_SECRET');
    expect(seen).not.toHaveProperty('EXACT_NAME_LONGER');
    expect(JSON.stringify(seen)).not.toContain('hunter2');
    expect(seen[PROCESS_TREE_MARKER_ENV]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('fills PATH, HOME and LANG with documented defaults and lets extra override them', () => {
    expect(buildChildEnv({}, [], {})).toEqual({ PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' });
    expect(buildChildEnv({ PATH: '/p', HOME: '/h', LANG: 'de_DE.UTF-8', OTHER: 'x' }, [], { LANG: 'C' })).toEqual({ PATH: '/p', HOME: '/h', LANG: 'C' });
  });

  it('rejects malformed allowlist entries and env values', () => {
    for (const entry of ['', 'A*B', '**', 'A*_*']) {
      expect(() => buildChildEnv({}, [entry], {})).toThrow(/allowlist entry .* is invalid; use an exact variable name or a prefix ending in '\*'/);
    }
    expect(() => buildChildEnv({}, [], { BAD: 'a\0b' })).toThrow(/BAD contains a NUL byte/);
    expect(() => buildChildEnv({}, [], { 'A=B': 'x' })).toThrow(/name "A=B" is invalid/);
  });
});

describe('runSubprocess: bad input and spawn failures', () => {
  const cases: Array<[string, Partial<SubprocessRequest>, RegExp]> = [
    ['empty argv', { argv: [] }, /argv must be a non-empty array/],
    ['empty executable', { argv: [''] }, /argv\[0\] \(the executable\) is empty/],
    ['NUL byte in an argument', { argv: ['echo', 'ok', 'a\0b'] }, /argv\[2\] contains a NUL byte/],
    ['non-string argument', { argv: ['echo', 42 as unknown as string] }, /argv\[1\] must be a string/],
    ['NUL byte in an env value', { argv: ['echo'], env: { X: 'a\0b' } }, /env variable X contains a NUL byte/],
    ['non-string env value', { argv: ['echo'], env: { X: 1 as unknown as string } }, /env variable X must be a string/],
    ['zero timeout', { argv: ['echo'], timeoutMs: 0 }, /timeoutMs must be a positive number/],
    ['fractional output cap', { argv: ['echo'], maxOutputBytes: 1.5 }, /maxOutputBytes must be a positive integer/],
    ['negative grace', { argv: ['echo'], killGraceMs: -1 }, /killGraceMs must be a number of milliseconds >= 0/],
  ];
  for (const [name, overrides, message] of cases) {
    it(`rejects ${name}`, async () => {
      const error = await rejection(runSubprocess(request({ argv: ['echo'], ...overrides })));
      expect(error.code).toBe('INVALID_INPUT');
      expect(error.message).toMatch(message);
    });
  }

  it('rejects a missing working directory with a clear message', async () => {
    const missing = join(dir, 'nope');
    const error = await rejection(runSubprocess(request({ argv: ['echo'], cwd: missing })));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toBe(`working directory ${missing} does not exist; create it or fix \`cwd\` in the tool config`);
  });

  it('rejects a cwd that is a file', async () => {
    await writeFile(join(dir, 'file'), '');
    const error = await rejection(runSubprocess(request({ argv: ['echo'], cwd: join(dir, 'file') })));
    expect(error).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/is not a directory/) });
  });

  it('names a missing executable and says to check PATH and the config', async () => {
    const error = await rejection(runSubprocess(request({ argv: ['kiwi-no-such-tool-xyz', '--help'] })));
    expect(error.code).toBe('SPAWN_FAILED');
    expect(error.message).toMatch(/^executable kiwi-no-such-tool-xyz was not found on PATH \(.*\); check that it is installed and on PATH/);
    expect(error.message).toMatch(/tool's config/);
  });

  it('says when an explicit path is not executable', async () => {
    await writeFile(join(dir, 'script'), '#!/bin/sh\necho hi\n', { mode: 0o644 });
    const error = await rejection(runSubprocess(request({ argv: [join(dir, 'script')] })));
    expect(error).toMatchObject({ code: 'SPAWN_FAILED', message: expect.stringMatching(/permission denied/) });
  });

  it('does not start when the signal has already fired', async () => {
    const error = await rejection(runSubprocess(request({ argv: ['echo'], signal: AbortSignal.abort() })));
    expect(error.code).toBe('TOOL_CANCELLED');
  });
});

describe('runSubprocess: output caps', () => {
  it('accepts output exactly at the cap on both streams', async () => {
    const cap = 300_000;
    const result = await runSubprocess(request({ argv: [node, fixture('emit.mjs'), String(cap), String(cap)], maxOutputBytes: cap }));
    expect(result.exitCode).toBe(0);
    expect(result.stdout.length).toBe(cap);
    expect(result.stderr.length).toBe(cap);
  });

  it('refuses output one byte over the cap', async () => {
    const error = await rejection(runSubprocess(request({ argv: [node, fixture('emit.mjs'), '0', '4097'], maxOutputBytes: 4096 })));
    expect(error).toMatchObject({ code: 'OUTPUT_TOO_LARGE', details: { stream: 'stderr' } });
  });

  for (const stream of ['stdout', 'stderr'] as const) {
    it(`ends a process that writes past the cap on ${stream}`, async () => {
      const argv = [node, fixture('emit.mjs'), stream === 'stdout' ? 'forever' : '0', stream === 'stderr' ? 'forever' : '0'];
      const error = await rejection(runSubprocess(request({ argv, maxOutputBytes: 100_000 })));
      expect(error.code).toBe('OUTPUT_TOO_LARGE');
      expect(error.message).toContain(`more than 100000 bytes to ${stream}`);
      expect(error.details).toMatchObject({ stream, maxOutputBytes: 100_000 });
      expect((error.details?.[stream] as string).length).toBe(100_000);
    });
  }
});

describe('runSubprocess: ending the process tree', () => {
  it('ends a hanging process on timeout and says how to raise the limit', async () => {
    const pidFile = join(dir, 'pid');
    const error = await rejection(runSubprocess(request({ argv: ['bash', fixture('hang.sh'), pidFile], timeoutMs: 1500 })));
    expect(error.code).toBe('TOOL_TIMEOUT');
    expect(error.message).toBe('bash did not finish within 1500 ms and was ended; raise `timeout_ms` in the tool config if it needs longer');
    const [pid] = await readPids(pidFile);
    expect(pid).toBeGreaterThan(0);
    expect(isRunning(pid as number)).toBe(false);
  });

  it('SIGKILLs a process that ignores SIGTERM after the grace period', async () => {
    const pidFile = join(dir, 'pid');
    const error = await rejection(
      runSubprocess(request({ argv: ['bash', fixture('hang.sh'), pidFile, 'ignore-term'], timeoutMs: 1500, killGraceMs: 200 })),
    );
    expect(error.code).toBe('TOOL_TIMEOUT');
    expect(error.details).toMatchObject({ exitSignal: 'SIGKILL' });
    const [pid] = await readPids(pidFile);
    expect(isRunning(pid as number)).toBe(false);
  });

  it('ends the tree when the signal aborts mid-run', async () => {
    const pidFile = join(dir, 'pid');
    const controller = new AbortController();
    const running = runSubprocess(request({ argv: ['bash', fixture('hang.sh'), pidFile], signal: controller.signal }));
    await waitFor(() => existsSync(pidFile), 'the child to record its pid');
    controller.abort();
    const error = await rejection(running);
    expect(error.code).toBe('TOOL_CANCELLED');
    expect(error.message).toMatch(/^bash was cancelled while running and its process tree was ended/);
    const [pid] = await readPids(pidFile);
    expect(isRunning(pid as number)).toBe(false);
  });

  it('ends background processes the child left behind when it exits normally', async () => {
    const pidFile = join(dir, 'pid');
    const result = await runSubprocess(request({ argv: ['bash', fixture('background.sh'), pidFile] }));
    expect(result).toMatchObject({ exitCode: 0, stdout: 'done\n' });
    const [pid] = await readPids(pidFile);
    expect(isRunning(pid as number)).toBe(false);
  });

  it('ends a bounded fork tree, including branches that left the group with setsid, on timeout', async () => {
    const pidFile = join(dir, 'pids');
    // depth 5, fan-out 2: 63 shells + 32 sleeps; plus a setsid branch (7 + 4) and an orphaned one (3 + 2).
    const expected = 63 + 32 + 11 + 5;
    const error = await rejection(
      runSubprocess(request({ argv: ['bash', fixture('tree.sh'), '5', '2', pidFile, 'top'], timeoutMs: 4000, killGraceMs: 500 })),
    );
    expect(error.code).toBe('TOOL_TIMEOUT');
    expect(error.details).toMatchObject({ survivors: [] });
    const pids = await readPids(pidFile);
    expect(pids.length).toBe(expected);
    expect(pids.filter(isRunning)).toEqual([]);
  });
});
