import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { processAlive } from '../../src/base/process-alive.js';
import { abandonedEntries } from './abandoned-entries.js';
import { findBinary } from './find-binary.js';
import { freePort } from './free-port.js';
import { serverProcess } from './server-process.js';
import { commandLine } from './postgres-server.js';

/**
 * A real Redis server for the tests, from Debian's `redis-server` package (.ci/run installs it):
 * on 127.0.0.1 and a free port, nothing saved to disk. Its folder carries the pid of the process
 * that started it, so the next start stops one that a killed run left behind.
 */

export interface RedisServer {
  url: string;
  stop(): Promise<void>;
}

const DIR_PREFIX = 'kiwi-redis-';

export function redisServerPath(): string | undefined {
  return findBinary('redis-server', ['/usr/bin', '/usr/local/bin']);
}

/** Whether the tests can run against Redis here. CI sets KIWI_REQUIRE_REDIS=1: there a missing server fails instead of skipping. */
export function redisAvailable(): boolean {
  return redisServerPath() !== undefined || process.env['KIWI_REQUIRE_REDIS'] === '1';
}

function removeAbandonedServers(): void {
  for (const dir of abandonedEntries(tmpdir(), /^kiwi-redis-(\d+)-/)) {
    let pid = 0;
    try {
      pid = Number(readFileSync(path.join(dir, 'server.pid'), 'utf8'));
    } catch {
      // started no server, or never wrote its pid
    }
    if (processAlive(pid) && commandLine(pid).includes('redis-server')) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Resolves once the server answers PING on the port, or rejects. */
function ping(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(1000, () => socket.destroy(new Error('no answer to PING')));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      reply += d.toString();
      if (reply.includes('\r\n')) {
        socket.end();
        if (reply.startsWith('+PONG')) resolve();
        else reject(new Error(`PING answered ${reply.trim()}`));
      }
    });
    socket.on('error', reject);
  });
}

export async function startRedis(): Promise<RedisServer> {
  const bin = redisServerPath();
  if (bin === undefined) throw new Error('Redis is not installed: `apt-get install redis-server` (.ci/run does)');
  removeAbandonedServers();
  const dir = mkdtempSync(path.join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const port = await freePort();
  const server = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'], { stdio: ['ignore', 'pipe', 'pipe'] });
  if (server.pid !== undefined) writeFileSync(path.join(dir, 'server.pid'), String(server.pid));
  const { output, stop } = serverProcess(server, dir);
  for (let attempt = 0; ; attempt++) {
    try {
      await ping(port);
      return { url: `redis://127.0.0.1:${port}`, stop };
    } catch (error) {
      if (server.exitCode !== null || attempt >= 100) {
        await stop();
        throw new Error(`Redis did not start: ${(error as Error).message}\n${output()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
