import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { PROCESS_TREE_MARKER_ENV } from '../../src/primitives/process-tree.js';
import { detectBwrap, openSandbox, UNSANDBOXED_WARNING, writeFoldersOf, type Sandbox, type SandboxGrant } from '../../src/primitives/sandbox.js';
import { buildChildEnv, runSubprocess, type SubprocessRequest } from '../../src/primitives/subprocess.js';
import { failure } from '../helpers/expect-failure.js';

const hasBwrap = await detectBwrap();
if (!hasBwrap && process.env.KIWI_REQUIRE_SANDBOX === '1') throw new Error('KIWI_REQUIRE_SANDBOX=1 but bwrap does not run here; install bubblewrap');
const node = process.execPath;
const env = buildChildEnv({ PATH: process.env.PATH, HOME: process.env.HOME, SECRET_TOKEN: 'hunter2', KIWI_OK: 'yes' }, ['KIWI_OK'], {});

let dir: string;
let sandbox: Sandbox;
const noGrant: SandboxGrant = { writePaths: [], network: false };

beforeAll(async () => {
  sandbox = await openSandbox({ mode: 'require', limits: { processes: 64 } });
});

beforeEach(async () => {
  dir = realpathSync(await mkdtemp(join(tmpdir(), 'kiwi-sandbox-')));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(argv: string[], grant: SandboxGrant = noGrant, extra: Partial<SubprocessRequest> = {}) {
  return runSubprocess({ argv, cwd: dir, env, timeoutMs: 10_000, maxOutputBytes: 1024 * 1024, killGraceMs: 200, sandbox: { sandbox, grant }, ...extra });
}

/** Processes on the host that carry a marker env var (ours: every tree the primitive started). */
/** Processes a call started (they carry the marker) whose command line has `token`: another test's calls, running meanwhile in the other worker, have not. */
function markedProcesses(token: string): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/u.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(`${PROCESS_TREE_MARKER_ENV}=`) && readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes(token)) count += 1;
    } catch {
      // gone, or not ours to read
    }
  }
  return count;
}

describe.runIf(hasBwrap)('subprocess sandbox (bwrap)', () => {
  it('runs node and python3 inside, without capabilities, in its own pid namespace', async () => {
    const r = await run([node, '-e', "console.log(JSON.stringify({ pid: process.pid, caps: require('fs').readFileSync('/proc/self/status', 'utf8').match(/^CapEff:\\s*(\\w+)/m)[1] }))"]);
    expect(r.exitCode).toBe(0);
    const seen = JSON.parse(r.stdout) as { pid: number; caps: string };
    expect(seen.pid).toBeLessThan(10);
    expect(seen.caps).toMatch(/^0+$/u);
    const py = await run(['python3', '-c', 'import os; print(os.getpid())']);
    expect(py.exitCode).toBe(0);
    expect(Number(py.stdout.trim())).toBeLessThan(10);
  });

  it('cannot see the gateway among its processes', async () => {
    const r = await run([node, '-e', "console.log(require('fs').readdirSync('/proc').filter((e) => /^\\d+$/.test(e)).join(' '))"]);
    expect(r.stdout.trim().split(' ')).not.toContain(String(process.pid));
  });

  it('keeps the env allowlist: only allowlisted and default variables reach the tool', async () => {
    const r = await run([node, '-e', 'console.log(JSON.stringify(process.env))']);
    const seen = JSON.parse(r.stdout) as Record<string, string>;
    expect(seen.KIWI_OK).toBe('yes');
    expect(seen.SECRET_TOKEN).toBeUndefined();
  });

  it('writes inside a granted folder, and fails with a read-only file system outside it', async () => {
    const granted = join(dir, 'out');
    await mkdir(granted);
    const write = (file: string) => run([node, '-e', `require('fs').writeFileSync(${JSON.stringify(file)}, 'x'); console.log('wrote')`], { writePaths: [granted], network: false });
    const inside = await write(join(granted, 'ok.txt'));
    expect(inside.exitCode).toBe(0);
    expect(await readFile(join(granted, 'ok.txt'), 'utf8')).toBe('x');
    const outside = await write(join(dir, 'escape.txt'));
    expect(outside.exitCode).not.toBe(0);
    expect(outside.stderr).toMatch(/EROFS|EACCES/u);
    const home = await write(join(process.cwd(), 'escape.txt'));
    expect(home.stderr).toMatch(/EROFS|EACCES/u);
  });

  it("keeps a granted folder's .git, .env and .ai read-only, as the policy's globs never match them", async () => {
    await mkdir(join(dir, '.git'));
    await mkdir(join(dir, '.ai', 'config'), { recursive: true });
    await writeFile(join(dir, '.env'), 'TOKEN=1\n');
    const write = (file: string) => run([node, '-e', `require('fs').writeFileSync(${JSON.stringify(file)}, 'x'); console.log('wrote')`], { writePaths: [dir], network: false });
    expect((await write(join(dir, 'out.txt'))).exitCode).toBe(0);
    for (const file of [join(dir, '.git', 'config'), join(dir, '.env'), join(dir, '.ai', 'config', 'policy.yaml')]) {
      const refused = await write(file);
      expect(refused.exitCode, file).not.toBe(0);
      expect(refused.stderr).toMatch(/EROFS|EACCES/u);
    }
    expect(await readFile(join(dir, '.env'), 'utf8')).toBe('TOKEN=1\n');
    // A dot folder the policy names is a grant of its own.
    expect((await run([node, '-e', `require('fs').writeFileSync(${JSON.stringify(join(dir, '.ai', 'config', 'x'))}, 'x')`], { writePaths: [dir, join(dir, '.ai')], network: false })).exitCode).toBe(0);
  });

  it('runs with a write glob that names an existing file, and writes that file', async () => {
    await writeFile(join(dir, 'CHANGELOG.md'), 'old\n');
    await mkdir(join(dir, '.git'));
    const writePaths = writeFoldersOf(dir, ['CHANGELOG.md']);
    expect(writePaths).toEqual([join(dir, 'CHANGELOG.md')]);
    const write = (file: string) => run([node, '-e', `require('fs').writeFileSync(${JSON.stringify(file)}, 'new\\n'); console.log('wrote')`], { writePaths, network: false });
    const r = await write(join(dir, 'CHANGELOG.md'));
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(await readFile(join(dir, 'CHANGELOG.md'), 'utf8')).toBe('new\n');
    const beside = await write(join(dir, 'README.md'));
    expect(beside.exitCode).not.toBe(0);
    expect(beside.stderr).toMatch(/EROFS|EACCES/u);
  });

  it('writes a dot folder granted below a granted folder, while the dot folder above it stays read-only', async () => {
    await mkdir(join(dir, '.ai', 'config'), { recursive: true });
    const writePaths = writeFoldersOf(dir, ['**/*.md', '.ai/notes/**']);
    expect(writePaths).toEqual([dir, join(dir, '.ai', 'notes')]);
    const write = (file: string) => run([node, '-e', `require('fs').writeFileSync(${JSON.stringify(file)}, 'x'); console.log('wrote')`], { writePaths, network: false });
    const notes = await write(join(dir, '.ai', 'notes', 'a.md'));
    expect(notes.stderr).toBe('');
    expect(notes.exitCode).toBe(0);
    expect(await readFile(join(dir, '.ai', 'notes', 'a.md'), 'utf8')).toBe('x');
    expect((await write(join(dir, 'top.md'))).exitCode).toBe(0);
    for (const file of [join(dir, '.ai', 'a.md'), join(dir, '.ai', 'config', 'policy.yaml')]) {
      const refused = await write(file);
      expect(refused.exitCode, file).not.toBe(0);
      expect(refused.stderr).toMatch(/EROFS|EACCES/u);
    }
    // The same grants listed deepest first bind the same way.
    expect((await run([node, '-e', `require('fs').writeFileSync(${JSON.stringify(join(dir, '.ai', 'notes', 'b.md'))}, 'x')`], { writePaths: [...writePaths].reverse(), network: false })).exitCode).toBe(0);
  });

  describe('network', () => {
    let server: Server;
    let port: number;
    beforeAll(async () => {
      server = createServer((socket) => socket.end('hello\n'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const connect = (grant: SandboxGrant) =>
      run([node, '-e', `const s = require('net').connect(${port}, '127.0.0.1'); s.on('data', (d) => { console.log('got', String(d).trim()); s.end(); }); s.on('error', (e) => { console.log('error', e.code); process.exitCode = 3; });`], grant);

    it('cannot reach a host, not even loopback, without a network grant', async () => {
      const r = await connect(noGrant);
      expect(r.exitCode).toBe(3);
      expect(r.stdout).toMatch(/^error E(CONNREFUSED|NETUNREACH)/u);
    });

    it('reaches it with the grant', async () => {
      const r = await connect({ writePaths: [], network: true });
      expect(r.stdout.trim()).toBe('got hello');
    });
  });

  it('says a missing program is missing, as it does without the sandbox, instead of running to exit 127', async () => {
    expect((await failure(run(['kiwi-no-such-tool-xyz']), 'SPAWN_FAILED')).message).toMatch(/^executable kiwi-no-such-tool-xyz was not found on PATH \(/);
    expect((await failure(run(['./missing.sh']), 'SPAWN_FAILED')).message).toMatch(/^executable \.\/missing\.sh was not found; check the path/);
    await writeFile(join(dir, 'here.sh'), '#!/bin/sh\necho here\n', { mode: 0o755 });
    expect((await run(['./here.sh'])).stdout).toBe('here\n');
  });

  it('stops forking at the process limit', async () => {
    const r = await run(['sh', '-c', 'i=0; while [ $i -lt 2000 ]; do sleep 30 & i=$((i+1)); done; echo spawned $i']);
    expect(r.stdout).not.toContain('spawned 2000');
    expect(r.stderr).toMatch(/fork/iu);
  });

  it('stops forking at the process limit even after raising the pid_max it can see', async () => {
    const r = await run(['sh', '-c', 'echo 100000 > /proc/sys/kernel/pid_max; i=0; while [ $i -lt 2000 ]; do sleep 30 & i=$((i+1)); done; echo spawned $i']);
    expect(r.stdout).not.toContain('spawned 2000');
    expect(r.stderr).toMatch(/fork/iu);
  });

  it('holds the memory limit', async () => {
    const small = await openSandbox({ mode: 'require', limits: { memoryBytes: 256 * 1024 * 1024 } });
    const r = await runSubprocess({
      argv: ['python3', '-c', 'b = bytearray(512 * 1024 * 1024); print(len(b))'],
      cwd: dir,
      env,
      timeoutMs: 10_000,
      maxOutputBytes: 64 * 1024,
      sandbox: { sandbox: small, grant: noGrant },
    });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/MemoryError/u);
  });

  it('contains a fork bomb: the call ends and nothing it started is left on the host', async () => {
    // A sleep of a length no other test asks for: what this bomb started, told apart on the host.
    const seconds = `30.${String(process.pid).slice(-4)}${Math.floor(Math.random() * 1000)}`;
    const before = markedProcesses(seconds);
    const bomb = ['sh', '-c', `while :; do sleep ${seconds} & done`];
    // Either the shell gives up when fork fails (a result) or the call runs out of time (an error).
    const outcome = await run(bomb, noGrant, { timeoutMs: 3000 }).catch((e: unknown) => e);
    if (isKiwiError(outcome)) expect(outcome.code).toBe('TOOL_TIMEOUT');
    else expect((outcome as { stderr: string }).stderr).toMatch(/fork/iu);
    expect(markedProcesses(seconds)).toBeLessThanOrEqual(before);
  });
});

describe('without bwrap', () => {
  const missing = join(tmpdir(), 'kiwi-no-such-bwrap');

  it('auto runs unsandboxed and warns once at start', async () => {
    const warnings: string[] = [];
    const open = await openSandbox({ mode: 'auto', bwrap: missing, warn: (m) => warnings.push(m) });
    expect(open.active).toBe(false);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toBe(`${UNSANDBOXED_WARNING} (${missing} was not found)`);
    const r = await runSubprocess({ argv: [node, '-e', 'console.log(process.pid)'], cwd: dir, env, timeoutMs: 10_000, maxOutputBytes: 1024, sandbox: { sandbox: open, grant: noGrant } });
    expect(Number(r.stdout)).toBeGreaterThan(0);
  });

  it('require refuses subprocess tools with a clear error', async () => {
    const open = await openSandbox({ mode: 'require', bwrap: missing });
    const error = await runSubprocess({ argv: [node, '-e', ''], cwd: dir, env, timeoutMs: 10_000, maxOutputBytes: 1024, sandbox: { sandbox: open, grant: noGrant } }).catch((e: unknown) => e);
    expect(isKiwiError(error) && error.code).toBe('SPAWN_FAILED');
    expect((error as Error).message).toMatch(/apt-get install bubblewrap/u);
  });

  it('off runs unsandboxed without a warning', async () => {
    const warnings: string[] = [];
    const open = await openSandbox({ mode: 'off', warn: (m) => warnings.push(m) });
    expect(open.active).toBe(false);
    expect(warnings).toEqual([]);
  });
});

describe('writeFoldersOf', () => {
  it('binds the literal folder of each write glob', async () => {
    await mkdir(join(dir, 'src', 'gen'), { recursive: true });
    expect(writeFoldersOf(dir, ['src/gen/**', 'src/*.ts', '**/*.md'])).toEqual([join(dir, 'src', 'gen'), join(dir, 'src'), dir]);
  });

  it('creates a granted folder that does not exist yet rather than granting its parent (never .ai, the policy\'s folder)', async () => {
    await mkdir(join(dir, '.ai', 'config'), { recursive: true });
    expect(writeFoldersOf(dir, ['.ai/notes/**', 'out/reports/today.txt'])).toEqual([join(dir, '.ai', 'notes'), join(dir, 'out', 'reports')]);
    expect(existsSync(join(dir, '.ai', 'notes'))).toBe(true);
    expect(existsSync(join(dir, 'out', 'reports', 'today.txt'))).toBe(false);
  });

  it('drops a folder that is a symlink out of the project', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'kiwi-outside-'));
    try {
      await symlink(outside, join(dir, 'link'));
      expect(writeFoldersOf(dir, ['link/**', 'link/made/**'])).toEqual([]);
      expect(existsSync(join(outside, 'made'))).toBe(false);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});
