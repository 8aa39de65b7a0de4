import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { detectBwrap, GATEWAY_INSTALL_ROOT, openSandbox, type Sandbox, type SandboxGrant } from '../../src/primitives/sandbox.js';
import { findExecutable } from '../../src/primitives/sandbox-probe.js';
import { buildChildEnv, runSubprocess, type SubprocessRequest } from '../../src/primitives/subprocess.js';
import { REPO_ROOT } from '../helpers/temp-project.js';
import { serveDatagrams } from '../helpers/unix-datagram-server.js';

const hasBwrap = await detectBwrap();
if (!hasBwrap && process.env.KIWI_REQUIRE_SANDBOX === '1') throw new Error('KIWI_REQUIRE_SANDBOX=1 but bwrap does not run here; install bubblewrap');
const node = process.execPath;
const env = buildChildEnv({ PATH: process.env.PATH, HOME: process.env.HOME }, [], {});
const noGrant: SandboxGrant = { writePaths: [], network: false };

let dir: string;
let sandbox: Sandbox;

beforeAll(async () => {
  if (hasBwrap) sandbox = await openSandbox({ mode: 'require' });
});

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'kiwi-isolation-')));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function run(argv: string[], grant: SandboxGrant = noGrant, extra: Partial<SubprocessRequest> = {}) {
  return runSubprocess({ argv, cwd: dir, env, timeoutMs: 30_000, maxOutputBytes: 1024 * 1024, killGraceMs: 200, sandbox: { sandbox, grant }, ...extra });
}

/** A unix socket server that counts the connections it got. */
async function listen(file: string): Promise<{ server: Server; accepted: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count += 1;
    socket.end('hello\n');
  });
  await new Promise<void>((resolve) => server.listen(file, resolve));
  return { server, accepted: () => count };
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

/** Node inside the sandbox connects to `file` and prints `got …` or `error CODE`. */
const connectNode = (file: string) =>
  `const s = require('net').connect(${JSON.stringify(file)}); s.on('data', (d) => { console.log('got', String(d).trim()); s.end(); }); s.on('error', (e) => { console.log('error', e.code); process.exitCode = 3; });`;
/** The same from python3, with the socket module itself. */
const connectPython = (file: string) =>
  `import socket\ntry:\n  s = socket.socket(socket.AF_UNIX); s.connect(${JSON.stringify(file)}); print('got', s.recv(16).decode().strip())\nexcept OSError as e:\n  print('error', e.errno)`;

/** Ways to a unix socket without socket(2), as a tool would try them (the fixture says what each mode does). */
const ESCAPE = readFileSync(join(REPO_ROOT, 'test/fixtures/sandbox/unix-socket-escape.py'), 'utf8');
const escape = (mode: string, file: string) => ['python3', '-c', ESCAPE, mode, file];

describe.runIf(hasBwrap)('host unix sockets', () => {
  let outside: string;
  beforeAll(() => {
    // Not under /tmp: the private /tmp would hide it whatever the fix, and the point is a socket the tool can see.
    outside = realpathSync(mkdtempSync('/var/tmp/kiwi-sockets-'));
  });
  afterAll(() => rmSync(outside, { recursive: true, force: true }));

  it('cannot connect to a socket in a host folder outside the project, from node or python', async () => {
    const file = join(outside, 'db.sock');
    const { server, accepted } = await listen(file);
    try {
      const fromNode = await run([node, '-e', connectNode(file)]);
      expect(fromNode.stdout.trim()).toBe('error EACCES');
      const fromPython = await run(['python3', '-c', connectPython(file)]);
      expect(fromPython.stdout.trim()).toBe('error 13');
      expect(accepted()).toBe(0);
    } finally {
      await close(server);
    }
  });

  it('cannot connect to a socket inside the project either, even with the network granted', async () => {
    const file = join(dir, 'app.sock');
    const { server, accepted } = await listen(file);
    try {
      const r = await run([node, '-e', connectNode(file)], { writePaths: [], network: true });
      expect(r.stdout.trim()).toBe('error EACCES');
      expect(accepted()).toBe(0);
    } finally {
      await close(server);
    }
  });

  it('cannot reach one through io_uring, a datagram socketpair or a 64-bit domain, which reach it outside the sandbox', async () => {
    const file = join(outside, 'secret.sock');
    const { server, accepted } = await listen(file);
    const log = await serveDatagrams(join(outside, 'log.sock'));
    try {
      // The same program without the sandbox: it reads the socket (io_uring where this kernel has IORING_OP_SOCKET, 5.19+) and writes to the log.
      const plain = async (mode: string, to: string) => (await runSubprocess({ argv: escape(mode, to), cwd: dir, env, timeoutMs: 30_000, maxOutputBytes: 4096 })).stdout.trim();
      expect(await plain('uring', file)).toMatch(/^(got hello|error \d+ (io_uring_setup|IORING_OP_SOCKET))$/u);
      expect(await plain('wide', file)).toBe('got hello');
      expect(await plain('dgram', log.file)).toBe('sent');
      expect(await log.received()).toEqual(['injected by the tool']);
      const reached = accepted();

      const inside = async (mode: string, to: string, grant = noGrant) => (await run(escape(mode, to), grant)).stdout.trim();
      // io_uring is absent (ENOSYS), with or without the network.
      expect(await inside('uring', file)).toBe('error 38 io_uring_setup');
      expect(await inside('uring', file, { writePaths: [], network: true })).toBe('error 38 io_uring_setup');
      // AF_UNIX in the low half of a 64-bit domain is still AF_UNIX.
      expect(await inside('wide', file)).toBe('error 13 socket');
      // A datagram socketpair, or SOCK_RAW which AF_UNIX makes one of, is refused.
      expect(await inside('dgram', log.file)).toBe('error 13 socketpair');
      expect(await inside('raw', log.file)).toBe('error 13 socketpair');
      // A stream socketpair is allowed, and stays connected for good: EISCONN.
      expect(await inside('stream', file)).toBe('error 106 connect');
      expect(accepted()).toBe(reached);
      expect(await log.received()).toEqual([]);
    } finally {
      await log.close();
      await close(server);
    }
  });

  it('still runs children over pipes (socketpair), and TCP where the network is granted', async () => {
    const r = await run([node, '-e', "console.log(require('child_process').execFileSync('sh', ['-c', 'echo child']).toString().trim())"]);
    expect(r.stdout.trim()).toBe('child');
    const py = await run(['python3', '-c', 'import socket; a, b = socket.socketpair(); a.send(b"x"); print(b.recv(1).decode(), socket.socket(socket.AF_INET).family.name)']);
    expect(py.stdout.trim()).toBe('x AF_INET');
  });
});

describe.runIf(hasBwrap)('size of the private /tmp', () => {
  const fill = (file: string, mb: number) => `import os\nwith open(${JSON.stringify(file)}, 'wb') as f:\n  try:\n    for _ in range(${mb}): f.write(b'x' * 1048576); f.flush()\n    print('wrote')\n  except OSError as e:\n    print('error', e.errno)`;

  it('refuses writes past its cap in /tmp and /dev/shm (ENOSPC), and /dev is read-only', async () => {
    const small = await openSandbox({ mode: 'require', limits: { tmpBytes: 4 * 1024 * 1024 } });
    const inSmall = (argv: string[]) => run(argv, noGrant, { sandbox: { sandbox: small, grant: noGrant } });
    expect((await inSmall(['python3', '-c', fill('/tmp/ok', 2)])).stdout.trim()).toBe('wrote');
    expect((await inSmall(['python3', '-c', fill('/tmp/big', 8)])).stdout.trim()).toBe('error 28');
    expect((await inSmall(['python3', '-c', fill('/dev/shm/big', 8)])).stdout.trim()).toBe('error 28');
    const dev = await inSmall(['sh', '-c', 'echo x > /dev/kiwi-fill && echo wrote; echo to-null > /dev/null && echo null-ok']);
    expect(dev.stdout.trim()).toBe('null-ok');
    expect(dev.stderr).toMatch(/Read-only file system/u);
  });

  it('has a default cap, and the policy limit must be a positive number of bytes', async () => {
    const r = await run(['sh', '-c', 'df -k /tmp /dev/shm | tail -n 2']);
    const sizes = r.stdout.trim().split('\n').map((line) => Number(line.split(/\s+/u)[1]));
    expect(sizes).toEqual([256 * 1024, 256 * 1024]);
    await expect(openSandbox({ mode: 'require', limits: { tmpBytes: 0 } })).rejects.toThrow(/sandbox limit tmp must be a positive integer/u);
  });
});

describe.runIf(hasBwrap)('inherited descriptors', () => {
  it('reach no tool: a descriptor the gateway inherited without close-on-exec is closed before bwrap', () => {
    const leak = join(dir, 'leaked.txt');
    // The shell opens 7 and 12 without close-on-exec (12: past dash's single-digit redirections) and runs a gateway-like process.
    const script = `exec 7>"$1" 12>"$1"; exec "$2" --import tsx "$3"`;
    const out = execFileSync('bash', ['-c', script, 'kiwi', leak, node, join(REPO_ROOT, 'test/fixtures/sandbox/list-fds.ts')], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
    const fds = JSON.parse(out) as Record<string, string>;
    expect(Object.values(fds)).not.toContain(leak);
    // 0-2 are the tool's pipes; nothing else is open in it.
    expect(Object.keys(fds).sort()).toEqual(['0', '1', '2']);
  });
});

describe.runIf(hasBwrap)('the host side of the wrapper', () => {
  it("runs nothing from the tool's environment on the host (BASH_ENV, exported functions)", async () => {
    const marker = join(dir, 'ran-on-host');
    const hook = join(dir, 'hook.sh');
    writeFileSync(hook, `echo x > ${marker}\n`);
    const hostile = { ...env, BASH_ENV: hook, 'BASH_FUNC_exec%%': `() { echo x > ${marker}; }` };
    const r = await run([node, '-e', "console.log('tool ran')"], noGrant, { env: hostile });
    expect(r.stdout.trim()).toBe('tool ran');
    expect(existsSync(marker)).toBe(false);
  });
});

describe.runIf(hasBwrap)("the gateway's install under /tmp", () => {
  it('stays readable, so a tool or MCP server run from its node_modules starts', async () => {
    const install = join(dir, 'kiwi-clone');
    mkdirSync(join(install, 'node_modules', 'some-server'), { recursive: true });
    writeFileSync(join(install, 'node_modules', 'some-server', 'index.js'), "console.log('started')\n");
    const cwd = realpathSync(mkdtempSync('/var/tmp/kiwi-cwd-'));
    try {
      const withInstall = await openSandbox({ mode: 'require', installRoot: install });
      const r = await runSubprocess({ argv: [node, join(install, 'node_modules', 'some-server', 'index.js')], cwd, env, timeoutMs: 30_000, maxOutputBytes: 4096, sandbox: { sandbox: withInstall, grant: noGrant } });
      expect(r.stderr).toBe('');
      expect(r.stdout.trim()).toBe('started');
      // Read-only, as the rest of the host.
      const write = await runSubprocess({ argv: ['sh', '-c', `echo x > ${join(install, 'x')}`], cwd, env, timeoutMs: 30_000, maxOutputBytes: 4096, sandbox: { sandbox: withInstall, grant: noGrant } });
      expect(write.stderr).toMatch(/Read-only file system/u);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("defaults to this repository's root, the folder that holds node_modules", () => {
    expect(GATEWAY_INSTALL_ROOT).toBe(REPO_ROOT);
  });
});

describe('finding bwrap at start', () => {
  let bin: string;
  beforeEach(() => {
    bin = realpathSync(mkdtempSync(join(tmpdir(), 'kiwi-fake-bwrap-')));
  });
  afterEach(() => rmSync(bin, { recursive: true, force: true }));

  it.runIf(hasBwrap)("finds bwrap in the standard folders when the gateway's PATH lacks them", () => {
    // A fresh process, as a gateway starts: its PATH holds only an empty folder.
    const out = execFileSync(node, ['--import', 'tsx', join(REPO_ROOT, 'test/fixtures/sandbox/open-sandbox.ts')], { cwd: REPO_ROOT, env: { PATH: bin }, encoding: 'utf8', timeout: 60_000 });
    expect(JSON.parse(out)).toEqual({ active: true, reason: null });
  });

  it('looks a name up in the given PATH first, then the standard folders', () => {
    writeFileSync(join(bin, 'bwrap'), '#!/bin/sh\n', { mode: 0o755 });
    expect(findExecutable('bwrap', bin)).toBe(join(bin, 'bwrap'));
    expect(findExecutable('kiwi-no-such-program', bin)).toBeUndefined();
  });

  it.runIf(hasBwrap)('asks again at each start: a bwrap that failed once is used once it works', async () => {
    const fake = join(bin, 'bwrap');
    const real = findExecutable('bwrap') as string;
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n', { mode: 0o755 });
    const warnings: string[] = [];
    const failed = await openSandbox({ mode: 'auto', bwrap: fake, warn: (m) => warnings.push(m) });
    expect(failed.active).toBe(false);
    expect(failed.reason).toBe(`${fake} failed: bwrap: setting up uid map: Permission denied`);
    expect(warnings[0]).toContain(`(${fake} failed: bwrap: setting up uid map: Permission denied)`);
    writeFileSync(fake, `#!/bin/sh\nexec ${real} "$@"\n`);
    chmodSync(fake, 0o755);
    expect((await openSandbox({ mode: 'auto', bwrap: fake, warn: (m) => warnings.push(m) })).active).toBe(true);
  });

  it.runIf(hasBwrap)("runs the test of a bwrap that passed once a process, and every later sandbox's calls through that bwrap", async () => {
    const fake = join(bin, 'counted-bwrap');
    const runs = join(bin, 'runs');
    writeFileSync(fake, `#!/bin/sh\necho run >> '${runs}'\nexec ${findExecutable('bwrap') as string} "$@"\n`, { mode: 0o755 });
    const first = await openSandbox({ mode: 'require', bwrap: fake });
    const second = await openSandbox({ mode: 'require', bwrap: fake });
    expect([first.active, second.active]).toEqual([true, true]);
    expect(readFileSync(runs, 'utf8')).toBe('run\n');
    // Each sandbox it opens runs its calls through that bwrap.
    const out = await runSubprocess({ argv: [node, '-e', 'process.stdout.write("inside")'], cwd: dir, env, timeoutMs: 30_000, maxOutputBytes: 4096, sandbox: { sandbox: second, grant: noGrant } });
    expect(out.stdout).toBe('inside');
    expect(readFileSync(runs, 'utf8')).toBe('run\nrun\n');
  });

  it('says why when bwrap is missing, naming where it looked', async () => {
    const opened = await openSandbox({ mode: 'auto', bwrap: 'kiwi-no-such-bwrap', path: bin, warn: () => undefined });
    expect(opened.active).toBe(false);
    expect(opened.reason).toBe(`kiwi-no-such-bwrap was not found in ${bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`);
  });
});
