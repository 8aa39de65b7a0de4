import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { detectBwrap, openSandbox, type Sandbox } from '../../src/primitives/sandbox.js';
import { buildChildEnv, runSubprocess } from '../../src/primitives/subprocess.js';
import { percentile, round } from '../stats.js';

const USAGE = 'npm run bench -- sandbox [--spawns 200] [--command /bin/true] [--project DIR] [--out FILE]';

/**
 * `npm run bench -- sandbox`: what the sandbox adds to one subprocess call. The same trivial
 * command runs `spawns` times through runSubprocess unsandboxed and sandboxed (bwrap, nested pid
 * namespace, setpriv, prlimit), alternating so both see the same machine; one sample is one call,
 * from spawn to exit and the process-tree sweep. The sandboxed calls mask the secrets of
 * `--project` (default: the current folder, this repository) as a tool call of that project would.
 */

const GOAL_OVERHEAD_P50_MS = 10;

export async function runSandboxBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { spawns: { type: 'string' }, command: { type: 'string' }, project: { type: 'string' }, out: { type: 'string' } }, strict: true });
  const spawns = Number(values.spawns ?? 200);
  const command = values.command ?? '/bin/true';
  const project = path.resolve(values.project ?? process.cwd());
  if (!Number.isInteger(spawns) || spawns < 10) throw new Error(`usage: ${USAGE}`);
  if (!(await detectBwrap())) throw new Error('bwrap does not run here; install bubblewrap (apt-get install bubblewrap) to measure the sandbox');

  const sandbox = await openSandbox({ mode: 'require' });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kiwi-bench-sandbox-'));
  try {
    const env = buildChildEnv(process.env, [], {});
    const once = async (inside: Sandbox | undefined): Promise<number> => {
      const start = performance.now();
      const r = await runSubprocess({
        argv: [command],
        cwd: dir,
        env,
        timeoutMs: 10_000,
        maxOutputBytes: 64 * 1024,
        ...(inside ? { sandbox: { sandbox: inside, grant: { writePaths: [dir], network: false, secrets: { root: project, allow: [[]] } } } } : {}),
      });
      if (r.exitCode !== 0) throw new Error(`${command} exited ${r.exitCode}${inside ? ' in the sandbox' : ''}: ${r.stderr.trim()}`);
      return performance.now() - start;
    };
    for (let i = 0; i < 10; i++) {
      await once(undefined);
      await once(sandbox);
    }
    const plain: number[] = [];
    const boxed: number[] = [];
    for (let i = 0; i < spawns; i++) {
      plain.push(await once(undefined));
      boxed.push(await once(sandbox));
    }
    const stats = (s: number[]) => ({ p50: round(percentile(s, 50), 2), p99: round(percentile(s, 99), 2), max: round(Math.max(...s), 2) });
    const report = {
      bench: 'sandbox',
      command,
      project,
      spawns,
      unsandboxed_ms: stats(plain),
      sandboxed_ms: stats(boxed),
      overhead_ms: { p50: round(percentile(boxed, 50) - percentile(plain, 50), 2), p99: round(percentile(boxed, 99) - percentile(plain, 99), 2) },
      goal_overhead_p50_ms: GOAL_OVERHEAD_P50_MS,
      machine: { node: process.version, cpus: os.availableParallelism(), kernel: os.release() },
    };
    console.log(`sandbox: ${spawns} calls of ${command} each way (bash + bwrap + sh + unshare + setpriv + prlimit), masking the secrets of ${project}`);
    console.log(`  unsandboxed: p50 ${report.unsandboxed_ms.p50} ms, p99 ${report.unsandboxed_ms.p99} ms`);
    console.log(`  sandboxed:   p50 ${report.sandboxed_ms.p50} ms, p99 ${report.sandboxed_ms.p99} ms`);
    console.log(`  overhead:    p50 ${report.overhead_ms.p50} ms, p99 ${report.overhead_ms.p99} ms (goal: p50 < ${GOAL_OVERHEAD_P50_MS} ms)`);
    if (values.out) {
      await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
      console.error(`wrote ${values.out}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
