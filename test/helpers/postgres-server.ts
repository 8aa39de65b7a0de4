import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { processAlive } from '../../src/base/process-alive.js';
import { abandonedEntries } from './abandoned-entries.js';
import { freePort } from './free-port.js';

/**
 * A real Postgres server for the tests, from Debian's `postgresql` package (.ci/run installs it):
 * a fresh cluster in a temporary folder, on 127.0.0.1 and a free port, trust auth, no fsync. As
 * root it runs as the `postgres` user, which Postgres requires. Stopped and removed by `stop()`.
 */

export interface PostgresServer {
  url: string;
  stop(): Promise<void>;
}

/** The folder of initdb and postgres: on the PATH, or where Debian puts them. */
export function postgresBinDir(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir !== '' && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres'))) return dir;
  }
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const dir = path.join(debian, v, 'bin');
    if (existsSync(path.join(dir, 'initdb'))) return dir;
  }
  return undefined;
}

/**
 * Whether the tests can run against a Postgres server here. CI (.ci/run) installs one and sets
 * KIWI_REQUIRE_POSTGRES=1, so that there a missing server fails instead of skipping.
 */
export function postgresAvailable(): boolean {
  return postgresBinDir() !== undefined || process.env['KIWI_REQUIRE_POSTGRES'] === '1';
}

function readPidLine(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n')[0] ?? '';
  } catch {
    return '';
  }
}

/** `<tmp>/kiwi-postgres-<pid of the process that started it>-XXXXXX/`: its cluster and socket. */
const DIR_PREFIX = 'kiwi-postgres-';

/**
 * Stops the servers, and removes the folders, that processes no longer running started: a test
 * run killed or interrupted (Ctrl-C) never gets to stop its own, which would otherwise run on.
 */
function removeAbandonedServers(): void {
  for (const dir of abandonedEntries(tmpdir(), /^kiwi-postgres-(\d+)-/)) {
    const data = path.join(dir, 'data');
    const postmaster = Number(readPidLine(path.join(data, 'postmaster.pid')));
    // Only that postmaster: after a reboot the pid in a stale postmaster.pid can be anyone's.
    // Its backends end by themselves once it is gone.
    if (processAlive(postmaster) && commandLine(postmaster).includes(data)) process.kill(postmaster, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error('Postgres is not installed: `apt-get install postgresql` (.ci/run does), or put initdb and postgres on the PATH');
  const asRoot = process.getuid?.() === 0;
  removeAbandonedServers();
  const dir = mkdtempSync(path.join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const data = path.join(dir, 'data');
  if (asRoot) {
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    if (!Number.isInteger(uid) || uid <= 0) throw new Error('running as root, Postgres needs the `postgres` user, which Debian\'s postgresql package creates');
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const command = (file: string, args: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, file), ...args]] : [path.join(bin, file), args]);

  const [initCmd, initArgs] = command('initdb', ['-D', data, '-U', 'kiwi', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  // Not spawnSync: the global setup makes its other resources on this thread meanwhile.
  const init = await new Promise<{ status: number | null; output: string }>((resolve) => {
    execFile(initCmd, initArgs, { encoding: 'utf8' }, (error, stdout, stderr) => resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : null, output: stderr || stdout || (error?.message ?? '') }));
  });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status}): ${init.output}`);
  }
  const port = await freePort();
  const [serverCmd, serverArgs] = command('postgres', ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'full_page_writes=off']);
  const server: ChildProcess = spawn(serverCmd, serverArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `postgres://kiwi@127.0.0.1:${port}/postgres`;
  const stop = async (): Promise<void> => {
    if (server.exitCode === null) {
      // Fast shutdown. As root the child is runuser, which does not pass SIGINT on: the
      // postmaster itself gets it (its pid is the first line of postmaster.pid), else the
      // 5 s below pass before the SIGKILL.
      const postmaster = Number(readPidLine(path.join(data, 'postmaster.pid')));
      if (asRoot && Number.isInteger(postmaster) && postmaster > 0) process.kill(postmaster, 'SIGINT');
      else server.kill('SIGINT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (server.exitCode === null) server.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return { url, stop };
    } catch (error) {
      await client.end().catch(() => undefined);
      if (server.exitCode !== null || attempt >= 100) {
        await stop();
        throw new Error(`Postgres did not start: ${(error as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
