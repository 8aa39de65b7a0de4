import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createSocketServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KiwiError } from '../../src/base/errors.js';
import { DEFAULT_CONTAINER_LIMITS } from '../../src/policy/isolation-choice.js';
import { createContainerRunner, type ContainerGrant } from '../../src/primitives/container.js';
import type { SubprocessRequest } from '../../src/primitives/subprocess.js';
import { failure } from '../helpers/expect-failure.js';
import { REPO_ROOT } from '../helpers/temp-project.js';
import { serveDatagrams } from '../helpers/unix-datagram-server.js';

const runner = createContainerRunner({ warn: () => undefined });
const probe = await runner.availability();
if (!probe.ok && process.env.KIWI_REQUIRE_CONTAINERS === '1') throw new Error(`KIWI_REQUIRE_CONTAINERS=1 but containers do not run here: ${probe.reason}`);
if (!probe.ok) console.warn(`container tests skipped: ${probe.reason}`);

const PATH = '/usr/local/bin:/usr/bin:/bin';
let root: string;
let grant: ContainerGrant;

/** Whether podman still lists the container a failed call names (running or stopped). */
function leftover(error: KiwiError): boolean {
  const name = String(error.details?.['container']);
  expect(name).toMatch(/^kiwi-[0-9a-f]{16}$/u);
  return execFileSync('podman', ['ps', '--all', '--filter', `name=^${name}$`, '--format', '{{.Names}}'], { encoding: 'utf8' }).trim() !== '';
}

function run(argv: string[], extra: Partial<SubprocessRequest> = {}, g: ContainerGrant = grant) {
  return runner.run({ argv, cwd: root, env: { PATH }, timeoutMs: 30_000, maxOutputBytes: 64 * 1024, killGraceMs: 200, ...extra }, g);
}

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'kiwi-container-')));
  mkdirSync(join(root, 'data'));
  mkdirSync(join(root, 'out'));
  writeFileSync(join(root, 'data', 'in.txt'), 'granted text\n');
  writeFileSync(join(root, '.env'), 'TOKEN=hunter2\n');
  mkdirSync(join(root, '.ai', 'state'), { recursive: true });
  writeFileSync(join(root, '.ai', 'state', 'keys.json'), '{"key":"secret"}');
  grant = {
    network: false,
    readPaths: [join(root, 'data')],
    writePaths: [join(root, 'out')],
    limits: { ...DEFAULT_CONTAINER_LIMITS, memoryMb: 128 },
    secrets: { root, allow: [[]], named: ['data/**', 'out/**'] },
  };
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe.runIf(probe.ok)('the container executor', () => {
  it('shows the granted folders as granted and nothing else of the host', async () => {
    const script = [
      'cat in.txt',
      'echo made > ../out/made.txt && echo wrote-out',
      'echo no > x 2>/dev/null || echo data-read-only',
      'ls /root /home /work 2>/dev/null || echo no-homes',
      'cut -d: -f1 /etc/passwd | tr "\\n" " "; echo',
      'ls /',
    ].join('; ');
    const r = await run(['sh', '-c', script], { cwd: join(root, 'data') });
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 4)).toEqual(['granted text', 'wrote-out', 'data-read-only', 'no-homes']);
    // The image's own passwd, not the host's.
    expect(lines[4]).toBe('root nobody ');
    expect(readFileSync(join(root, 'out', 'made.txt'), 'utf8')).toBe('made\n');
  });

  it('masks the project secrets inside a granted folder', async () => {
    const whole = { ...grant, readPaths: [root] };
    const r = await run(['sh', '-c', 'echo "[$(cat .env)]"; echo "[$(ls -A .ai/state)]"; cat data/in.txt'], {}, whole);
    expect(r.stdout).toBe('[]\n[]\ngranted text\n');
  });

  it('passes only the given variables, and no network without a grant', async () => {
    const r = await run(['python3', '-c', 'import os, socket\nprint(sorted(k for k in os.environ if k not in ("HOSTNAME", "container", "TERM", "HOME", "LC_CTYPE")))\ntry:\n  socket.create_connection(("192.0.2.1", 80), timeout=3)\nexcept OSError as e:\n  print("no network", e.errno)'], { env: { PATH, API_KEY: 'k1' } });
    expect(r.stdout).toBe("['API_KEY', 'PATH']\nno network 101\n");
  });

  describe('with a server on the host', () => {
    let server: Server;
    let url: string;
    beforeAll(async () => {
      server = createServer((_req, res) => res.end('reached'));
      await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
      const address = Object.values(networkInterfaces()).flat().find((a) => a?.family === 'IPv4' && !a.internal)?.address;
      url = `http://${address}:${(server.address() as { port: number }).port}/`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const fetchIt = (u: string) => `import urllib.request\ntry:\n  print(urllib.request.urlopen(${JSON.stringify(u)}, timeout=5).read().decode())\nexcept OSError as e:\n  print("unreachable")`;

    it('a restricted call cannot reach it; one granted the network can', async () => {
      expect((await run(['python3', '-c', fetchIt(url)])).stdout).toBe('unreachable\n');
      expect((await run(['python3', '-c', fetchIt(url)], {}, { ...grant, network: true })).stdout).toBe('reached\n');
    });
  });

  describe('with unix sockets served in a mounted folder', () => {
    // The fixture says what each mode tries.
    const escape = (mode: string, file: string) => ['python3', '-c', readFileSync(join(REPO_ROOT, 'test/fixtures/sandbox/unix-socket-escape.py'), 'utf8'), mode, file];

    it('cannot reach them by socket(2), io_uring, a 64-bit domain or a datagram socketpair; pipes, TCP sockets and children still work', async () => {
      let accepted = 0;
      const server = createSocketServer((socket) => {
        accepted += 1;
        socket.end('the secret\n');
      });
      const file = join(root, 'data', 'app.sock');
      await new Promise<void>((resolve) => server.listen(file, resolve));
      const log = await serveDatagrams(join(root, 'data', 'log.sock'));
      try {
        const inside = async (mode: string, to: string) => (await run(escape(mode, to), {}, { ...grant, network: true })).stdout.trim();
        expect(await inside('socket', file)).toBe('error 13 socket');
        expect(await inside('wide', file)).toBe('error 13 socket');
        expect(await inside('uring', file)).toBe('error 38 io_uring_setup');
        expect(await inside('dgram', log.file)).toBe('error 13 socketpair');
        expect(await inside('raw', log.file)).toBe('error 13 socketpair');
        expect(await inside('stream', file)).toBe('error 106 connect');
        expect(accepted).toBe(0);
        expect(await log.received()).toEqual([]);
        const normal = 'import socket, subprocess\na, b = socket.socketpair()\na.send(b"x")\nprint(b.recv(1).decode(), socket.socket(socket.AF_INET6).family.name, subprocess.run(["echo", "child"], capture_output=True).stdout.decode().strip())';
        expect((await run(['python3', '-c', normal])).stdout).toBe('x AF_INET6 child\n');
      } finally {
        await log.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      // Seven containers, one after another.
    }, 90_000);
  });

  it('ends a call past its memory limit with a clear error, and leaves no container', async () => {
    const before = readdirSync(root);
    const error = await failure(run(['python3', '-c', 'x = bytearray(400 * 1024 * 1024); print(len(x))']), 'TOOL_FAILED');
    expect(error.message).toMatch(/memory limit of 128 MB; raise config\.container\.memory_mb/u);
    expect(leftover(error)).toBe(false);
    // conmon notes the kill in an `oom` file in its working folder: never the project, which a checkpoint would commit.
    expect(readdirSync(root)).toEqual(before);
  });

  it('ends a call past its time limit, and removes its container', async () => {
    const error = await failure(run(['sleep', '60'], { timeoutMs: 1500 }), 'TOOL_TIMEOUT');
    expect(error.message).toMatch(/^sleep \(in container kiwi-[0-9a-f]{16}\) did not finish in time; the container was removed/u);
    expect(leftover(error)).toBe(false);
  });

  it('caps the output like the subprocess primitive', async () => {
    const error = await failure(run(['sh', '-c', 'yes kiwi'], { maxOutputBytes: 4096 }), 'OUTPUT_TOO_LARGE');
    expect(leftover(error)).toBe(false);
  });

  it('says what is wrong with a program the container does not have', async () => {
    const error = await failure(run([join(tmpdir(), 'kiwi-no-such-program')]), 'SPAWN_FAILED');
    expect(error.message).toMatch(/sees only the host's \/usr and the granted folders/u);
  });

  it('refuses variables that would configure podman itself', async () => {
    const error = await failure(run(['true'], { env: { PATH, CONTAINERS_CONF: '/tmp/x' } }), 'INVALID_INPUT');
    expect(error.message).toMatch(/CONTAINERS_CONF would configure podman itself/u);
  });
});

describe('without podman', () => {
  it('refuses the call with what is missing and how to install it, and runs nothing', async () => {
    const absent = createContainerRunner({ podman: '/nonexistent/kiwi-podman', warn: () => undefined });
    const found = await absent.availability();
    expect(found).toEqual({ ok: false, reason: expect.stringMatching(/^\/nonexistent\/kiwi-podman was not found.*apt-get install podman runc/u) });
    const marker = join(tmpdir(), `kiwi-container-ran-${process.pid}`);
    const error = await failure(absent.run({ argv: ['touch', marker], cwd: tmpdir(), env: { PATH }, timeoutMs: 5000, maxOutputBytes: 1024 }, { network: false, readPaths: [], writePaths: [tmpdir()], limits: DEFAULT_CONTAINER_LIMITS }), 'SPAWN_FAILED');
    expect(error.message).toMatch(/touch is refused: .*containers do not run here/u);
    expect(() => readFileSync(marker)).toThrow();
  });
});
