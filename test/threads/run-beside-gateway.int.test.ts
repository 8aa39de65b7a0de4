import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDemoProject } from '../helpers/demo-project.js';
import { startKiwiServe, type KiwiServeProcess } from '../helpers/kiwi-serve-process.js';
import { kiwiCli } from '../helpers/run-resources.js';

/**
 * `kiwi directives run` in a process of its own while `kiwi serve` serves the same project (issue
 * 41): the embedded kernel database admits one process, and the command used to try to open it,
 * printing "kernel: could not open its database…". A thread run here needs no kernel (nothing here
 * serves /v0, and a call that needs approval is refused at once), so it leaves the database to the
 * gateway: the thread runs, nothing is said about the kernel, and the gateway's kernel still serves.
 */

let root: string;
let served: KiwiServeProcess;

beforeAll(async () => {
  root = copyDemoProject('kiwi-run-beside-');
  served = await startKiwiServe(root);
}, 120_000);

afterAll(() => {
  served?.child.kill('SIGKILL');
  if (root) rmSync(root, { recursive: true, force: true });
});

/** `kiwi ARGS` as its own process, as a person runs it in a second terminal. */
async function kiwi(argv: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [...kiwiCli(), ...argv, '--project', root], {
    cwd: root,
    env: { PATH: process.env['PATH'], HOME: root, KIWI_USER_DIR: path.join(root, 'no-user-tier') },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, out, err };
}

describe('kiwi directives run while a gateway serves the project', () => {
  it('runs the thread here without touching the kernel database the gateway holds', async () => {
    const run = await kiwi(['directives', 'run', 'review_changes', '--model', 'kiwi-demo']);
    expect(run.err).not.toMatch(/kernel/);
    expect(run.code, `${run.out}\n${run.err}`).toBe(0);
    const id = /thread ([0-9a-f-]{36}): completed/.exec(run.out)?.[1];
    expect(id).toBeDefined();

    // The gateway's kernel is open and serves /v0; its console lists the thread run beside it.
    const executions = await fetch(`${served.url}/v0/executions?limit=1`);
    expect(executions.status).toBe(200);
    const threads = (await (await fetch(`${served.url}/admin/v1/threads`)).json()) as { threads: { id: string; status: string }[] };
    expect(threads.threads).toContainEqual(expect.objectContaining({ id, status: 'completed' }));
    expect(served.output()).not.toMatch(/could not open its database/);
  }, 90_000);
});
