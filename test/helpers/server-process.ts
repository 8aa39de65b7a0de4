import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

/**
 * A server process a test started, and its folder: what it printed (the last 4000 characters,
 * for the error when it does not start), and a stop that asks it to end (SIGTERM), kills it after
 * 5 s, then removes the folder.
 */
export function serverProcess(child: ChildProcess, dir: string): { output(): string; stop(): Promise<void> } {
  let output = '';
  const keep = (d: Buffer): void => void (output = (output + d.toString()).slice(-4000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = (): boolean => child.exitCode === null && child.signalCode === null;
  return {
    output: () => output,
    async stop() {
      if (running()) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (running()) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
