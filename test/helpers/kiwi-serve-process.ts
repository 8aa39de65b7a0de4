import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { kiwiCli } from './run-resources.js';
import { REPO_ROOT } from './temp-project.js';

export interface KiwiServeProcess {
  child: ChildProcessWithoutNullStreams;
  url: string;
  port: number;
  /** What it printed so far, stdout and stderr. */
  output(): string;
}

/**
 * `kiwi serve` as a process of its own on `root` (HOME is the project, no user tier, `env`
 * added), on a free port unless one is given; resolves with its URL once it listens. The caller
 * kills it (SIGKILL in an afterAll, or SIGTERM to watch it stop).
 */
export async function startKiwiServe(root: string, options: { env?: Record<string, string>; port?: number } = {}): Promise<KiwiServeProcess> {
  const child = spawn(process.execPath, [...kiwiCli(), 'serve', '--project', root, '--port', String(options.port ?? 0)], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'], HOME: root, KIWI_USER_DIR: path.join(root, 'no-user-tier'), ...options.env },
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kiwi serve did not start within 90 s:\n${output}`));
    }, 90_000);
    const look = (): void => {
      const found = /Kiwi Gateway listening on (http:\/\/\S+)/.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found[1] as string);
      }
    };
    child.stdout.on('data', look);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`kiwi serve exited (${String(code)}):\n${output}`));
    });
  });
  return { child, url, port: Number(new URL(url).port), output: () => output };
}
