import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findBinary } from './find-binary.js';
import { freePort } from './free-port.js';
import { serverProcess } from './server-process.js';

/**
 * HAProxy from Debian's `haproxy` package (.ci/run installs it) in front of replicas: HTTP mode,
 * round robin, no stickiness, health checks, on 127.0.0.1 and a free port. As a load balancer does, it sends each
 * request to the next server, so consecutive requests of one client land on different replicas.
 */

export interface Haproxy {
  url: string;
  stop(): Promise<void>;
}

export function haproxyPath(): string | undefined {
  return findBinary('haproxy', ['/usr/sbin', '/usr/bin']);
}

/** CI sets KIWI_REQUIRE_HAPROXY=1: there a missing HAProxy fails instead of skipping. */
export function haproxyAvailable(): boolean {
  return haproxyPath() !== undefined || process.env['KIWI_REQUIRE_HAPROXY'] === '1';
}

const connects = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

export async function startHaproxy(servers: { port: number }[]): Promise<Haproxy> {
  const bin = haproxyPath();
  if (bin === undefined) throw new Error('HAProxy is not installed: `apt-get install haproxy` (.ci/run does)');
  const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-haproxy-'));
  const port = await freePort();
  const config = path.join(dir, 'haproxy.cfg');
  writeFileSync(
    config,
    [
      'global',
      '  maxconn 512',
      'defaults',
      '  mode http',
      '  timeout connect 5s',
      '  timeout client 120s',
      '  timeout server 120s',
      // A new server connection per request, so each request is balanced on its own.
      '  option http-server-close',
      // A request whose replica refuses the connection (a killed one, before its check fails) goes to another.
      '  option redispatch',
      '  retries 3',
      'frontend kiwi',
      `  bind 127.0.0.1:${port}`,
      '  default_backend replicas',
      'backend replicas',
      '  balance roundrobin',
      ...servers.map((s, i) => `  server r${i + 1} 127.0.0.1:${s.port} check inter 500ms fall 1 rise 2`),
      '',
    ].join('\n'),
  );
  const child = spawn(bin, ['-f', config, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const { output, stop } = serverProcess(child, dir);
  for (let attempt = 0; !(await connects(port)); attempt++) {
    if (child.exitCode !== null || attempt >= 100) {
      await stop();
      throw new Error(`HAProxy did not start:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `http://127.0.0.1:${port}`, stop };
}
