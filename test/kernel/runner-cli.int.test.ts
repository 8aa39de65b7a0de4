import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { openEmbedded } from '../fixtures/kernel/backends.js';
import { useKernelServer, type WireEvent } from '../fixtures/kernel/kernel-server.js';
import { createTempProject, REPO_ROOT } from '../helpers/temp-project.js';
import { kiwiCli } from '../helpers/run-resources.js';

/**
 * `kiwi runner` as a real process against a kernel served over HTTP on 127.0.0.1 (embedded
 * PGlite, client keys required): agents' remote calls reach it, run through its project's tool
 * proxy, and the agents get the tools' real output; what its policy forbids is never offered, and
 * what its policy denies at run time fails for good; stopped, it leaves, and calls wait for the
 * next runner.
 */

const gatewayDir = mkdtempSync(path.join(tmpdir(), 'kiwi-runner-kernel-'));
const policyFile = path.join(gatewayDir, 'kernel-policy.yaml');
writeFileSync(policyFile, 'rules:\n  - { id: all, priority: 1, then: { decision: allow } }\n');

const project = createTempProject();
project.write('.ai/tools/test/shout.yaml', 'tool_id: shout\ntool_type: script\nexecutor: subprocess\nversion: "1.0.0"\ndescription: upper-cases a text\nmutates_state: false\nconfig: { command: node, script: shout.mjs, args: ["{script}", "{text}"] }\nparameters:\n  - { name: text, type: string, required: true }\n');
project.write('.ai/tools/test/shout.mjs', 'process.stdout.write(process.argv[2].toUpperCase());\n');
project.write('.ai/tools/test/read_note.yaml', 'tool_id: read_note\ntool_type: script\nexecutor: subprocess\nversion: "1.0.0"\ndescription: prints a note\nmutates_state: false\nconfig: { command: node, script: read_note.mjs, args: ["{script}", "{path}"] }\nparameters:\n  - { name: path, type: string, required: true, format: path }\n');
project.write('.ai/tools/test/read_note.mjs', "import { readFileSync } from 'node:fs';\nprocess.stdout.write(readFileSync(process.argv[2], 'utf8'));\n");
project.write('.ai/tools/test/wait.yaml', 'tool_id: wait\ntool_type: script\nexecutor: subprocess\nversion: "1.0.0"\ndescription: never ends\nmutates_state: false\nconfig: { command: node, script: wait.mjs, args: ["{script}"] }\n');
project.write('.ai/tools/test/wait.mjs', 'setInterval(() => undefined, 1000);\n');
project.write('.ai/tools/test/forbidden.yaml', 'tool_id: forbidden\ntool_type: script\nexecutor: subprocess\nversion: "1.0.0"\ndescription: not in the policy\nconfig: { command: node, args: ["-e", "1"] }\n');
project.write('.ai/config/policy.yaml', 'version: 1\ntools: [shout, read_note, wait]\nfilesystem: { read: ["notes/**"] }\ncommands:\n  - { executable: node }\n');
project.write('notes/today.txt', 'buy milk\n');
project.write('secret.txt', 'the combination\n');

afterAll(() => {
  project.remove();
  rmSync(gatewayDir, { recursive: true, force: true });
});

const server = useKernelServer(openEmbedded({ policyFile, reaperIntervalMs: 0 }), { bearerToken: true });
/** The client key the kernel requires (made when the server opens). */
const key = (): string => server.token as string;

interface RunnerProcess {
  child: ChildProcessWithoutNullStreams;
  /** The next JSON line on stdout whose `event` is `event`. */
  next(event: string): Promise<Record<string, unknown>>;
  stderr(): string;
  exited: Promise<number | null>;
}

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function spawnRunner(args: string[], env: Record<string, string> = { KIWI_KERNEL_KEY: key() }): RunnerProcess {
  const child = spawn(process.execPath, [...kiwiCli(), 'runner', '--project', project.root, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: project.root, KIWI_USER_DIR: path.join(project.root, 'no-user-tier'), ...env },
  });
  children.push(child);
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const lines: Record<string, unknown>[] = [];
  let wake = (): void => undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    wake();
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    child,
    stderr: () => err,
    exited,
    async next(event) {
      for (;;) {
        const i = lines.findIndex((l) => l['event'] === event);
        if (i !== -1) return lines.splice(i, 1)[0] as Record<string, unknown>;
        if (child.exitCode !== null) throw new Error(`the runner exited (${child.exitCode}) before a ${event} line; stderr:\n${err}`);
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), exited]);
      }
    },
  };
}

const stepEvents = async (executionId: string, stepId: string): Promise<WireEvent[]> => (await server.events(executionId)).filter((e) => e.step_id === stepId);

describe('kiwi runner', () => {
  it('runs remote calls through its tool proxy, offers only what its policy allows, fails a denied call for good, and leaves when stopped', async () => {
    const runner = spawnRunner(['--kernel', server.url, '--runner-id', 'box-1', '--json']);
    const ready = await runner.next('ready');
    expect(ready).toMatchObject({ runner_id: 'box-1', tools: ['read_note', 'shout', 'wait'] });
    expect(runner.stderr()).toContain('runner box-1 offers 3 tools');
    expect(runner.stderr()).toContain('1 more that the policy does not let it run are not offered');

    const agent = await server.startedAgent();
    // Queued first: had the runner offered it, it would have gone out before the call after it.
    const forbidden = (await agent.invoke('forbidden', {}, { remote: true })).body['step_id'] as string;
    const shout = await agent.invoke('shout', { text: 'hello' }, { remote: true });
    expect(shout.body).toMatchObject({ accepted: true });
    const shoutStep = shout.body['step_id'] as string;
    expect((await agent.stream.next('tool.result', 30_000)).data).toEqual({ execution_id: agent.id, step_id: shoutStep, status: 'succeeded', result: { text: 'HELLO', exit_code: 0 } });
    expect(await runner.next('job')).toMatchObject({ tool: 'shout', status: 'completed', retryable: false, execution_id: agent.id, step_id: shoutStep, attempt: 1, reported: true });
    expect((await stepEvents(agent.id, shoutStep)).map((e) => [e.type, e.payload['runner_id']])).toEqual([
      ['step.created', undefined],
      ['step.dispatched', ''],
      ['step.started', 'box-1'],
      ['step.completed', undefined],
    ]);
    expect((await stepEvents(agent.id, forbidden)).map((e) => e.type)).toEqual(['step.created', 'step.dispatched']);

    const denied = (await agent.invoke('read_note', { path: 'secret.txt' }, { remote: true })).body['step_id'] as string;
    const deniedResult = (await agent.stream.next('tool.result', 30_000)).data as Record<string, unknown>;
    expect(deniedResult).toMatchObject({ step_id: denied, status: 'failed' });
    expect(deniedResult['error']).toMatch(/^denied: argument `path`: .*secret\.txt/);
    expect(await runner.next('job')).toMatchObject({ tool: 'read_note', status: 'denied', retryable: false });
    expect((await stepEvents(agent.id, denied)).map((e) => e.type)).toEqual(['step.created', 'step.dispatched', 'step.started', 'step.failed']);
    expect((await stepEvents(agent.id, denied)).at(-1)?.payload).toMatchObject({ retryable: false });

    runner.child.kill('SIGTERM');
    expect(await runner.exited).toBe(0);
    expect(await runner.next('stopped')).toEqual({ event: 'stopped', runner_id: 'box-1' });
    expect(runner.stderr()).toContain('stopped; runner box-1 unregistered');

    // Both calls are in the runner's own audit log (written out by the time it has stopped), filed under the kernel's execution.
    const auditDir = path.join(project.root, '.ai', 'logs', 'audit');
    const records = readdirSync(auditDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.jsonl'))
      .flatMap((f) => readFileSync(path.join(auditDir, f), 'utf8').trim().split('\n'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => [r['tool'], r['decision'], r['source'], r['session'], r['client']])).toEqual([
      ['shout', 'allow', 'runner', agent.id, 'local'],
      ['read_note', 'deny', 'runner', agent.id, 'local'],
    ]);

    // Nobody runs shout now: the call waits in the queue, and the next runner gets it.
    const queued = (await agent.invoke('shout', { text: 'later' }, { remote: true })).body['step_id'] as string;
    const next = spawnRunner(['--kernel', server.url, '--runner-id', 'box-1', '--json', '--key', key()], {});
    expect((await agent.stream.next('tool.result', 30_000)).data).toMatchObject({ step_id: queued, status: 'succeeded', result: { text: 'LATER' } });
    expect((await stepEvents(agent.id, queued)).filter((e) => e.type === 'step.dispatched').map((e) => e.payload['runner_id'])).toEqual(['', 'box-1']);
    next.child.kill('SIGINT');
    expect(await next.exited).toBe(0);
  }, 120_000);

  it('cancels the job in hand when stopped and reports it retryable, for a read-only tool, so another runner may take it', async () => {
    const runner = spawnRunner(['--kernel', server.url, '--runner-id', 'box-2', '--tools', 'wait', '--concurrency', '2', '--json']);
    expect(((await runner.next('ready'))['consumers'] as string[]).map((c) => c.replace(/[0-9a-f]{8}$/, 'X'))).toEqual(['box-2-X', 'box-2-X']);
    const agent = await server.startedAgent();
    const log = await server.sse(`/v0/executions/${agent.id}/stream`);
    const step = (await agent.invoke('wait', {}, { remote: true })).body['step_id'] as string;
    expect((await log.next('step.started', 30_000)).data).toMatchObject({ step_id: step, payload: { runner_id: 'box-2' } });
    runner.child.kill('SIGTERM');
    expect(await runner.exited).toBe(0);
    expect(await runner.next('job')).toMatchObject({ tool: 'wait', status: 'failed', retryable: true, error: expect.stringMatching(/^TOOL_CANCELLED: /), reported: true });
    expect((await log.next('step.failed')).data).toMatchObject({ step_id: step, payload: { retryable: true } });
    expect((await log.next('step.retried')).data).toMatchObject({ step_id: step, payload: { next_attempt: 2 } });
    await server.post(`/v0/executions/${agent.id}/cancel`, {});
  }, 60_000);

  it('exits non-zero with a clear line when the kernel cannot be reached or refuses the runner', async () => {
    const unreachable = await kiwi('runner', '--kernel', 'http://127.0.0.1:1');
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toMatch(/^kiwi runner: runner \S+ offers 3 tools[^\n]*\nkiwi runner: UPSTREAM_HTTP: no Kiwi gateway answers at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\); start one with `kiwi serve`, or pass --kernel to reach the one that runs$/);

    const keyless = await kiwi('runner', '--kernel', server.url);
    expect(keyless.code).toBe(1);
    expect(keyless.err).toMatch(/kiwi runner: UNAUTHORIZED: This gateway needs a client key; .*; pass a client key with --key or KIWI_KERNEL_KEY$/);
  }, 60_000);

  it('says what is wrong with its flags before it connects', async () => {
    expect(await kiwi('runner')).toMatchObject({ code: 2, err: expect.stringMatching(/give the kernel's address, e\.g\. --kernel http/) });
    expect(await kiwi('runner', '--kernel', 'not a url')).toMatchObject({ code: 2, err: 'kiwi runner: --kernel "not a url" is not a URL; pass the gateway\'s address, e.g. http://127.0.0.1:8787' });
    expect((await kiwi('runner', '--kernel', server.url, '--concurrency', '0')).err).toMatch(/--concurrency must be a whole number from 1 to 32/);
    expect((await kiwi('runner', '--kernel', server.url, '--runner-id', 'a b')).err).toMatch(/--runner-id must be 1 to 200 letters/);
    expect(await kiwi('runner', '--kernel', server.url, '--tools', 'git_*')).toMatchObject({ code: 2, err: 'kiwi runner: --tools matches none of the 3 tools the policy lets this runner run: read_note, shout, wait' });
  });

  it('refuses an event over its cap, reconnects with a backoff, and says both on stderr', async () => {
    let streams = 0;
    const fake: Server = createServer((req, res) => {
      if (req.method === 'GET' && req.url?.startsWith('/v0/runners/stream?')) {
        streams += 1;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('retry: 5000\n\n');
        // The first connection gets one event past the 2 MiB cap; the next stays quiet.
        if (streams === 1) res.write(`event: job.assigned\ndata: {"id":"j","pad":"${'x'.repeat(3 * 1024 * 1024)}"}\n\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    });
    fake.listen(0, '127.0.0.1');
    await once(fake, 'listening');
    const stop = new AbortController();
    const err: string[] = [];
    const running = runCli(['runner', '--kernel', `http://127.0.0.1:${(fake.address() as { port: number }).port}`, '--runner-id', 'capped'], {
      env: { KIWI_USER_DIR: path.join(project.root, 'no-user-tier') },
      cwd: project.root,
      io: {
        out: () => undefined,
        err: (line) => {
          err.push(line);
          if (line.startsWith('kiwi runner: reconnected')) stop.abort();
        },
      },
      signal: stop.signal,
    });
    try {
      expect(await running).toBe(0);
    } finally {
      fake.closeAllConnections();
      fake.close();
    }
    expect(err.find((l) => l.includes('dropped'))).toMatch(/^kiwi runner: the stream of capped-[0-9a-f]{8} dropped \(OUTPUT_TOO_LARGE: http:\/\/127\.0\.0\.1:\d+\/v0\/runners\/stream sent an event over 2097152 bytes, more than one job can be; it was refused\); reconnecting in \d\.\d s$/);
    expect(err).toContain('kiwi runner: stopped; runner capped unregistered');
  }, 30_000);
});

async function kiwi(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env: { KIWI_USER_DIR: path.join(project.root, 'no-user-tier') }, cwd: project.root, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}
