import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import type { PipelineEvent } from '../../src/threads/run-pipeline.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import type { ThreadLine } from '../../src/threads/thread-store.js';
import { copyDemoProject } from '../helpers/demo-project.js';
import { refusal } from '../helpers/expect-failure.js';
import { preparePipelineProject } from '../helpers/pipeline-project.js';
import { kiwiCli } from '../helpers/run-resources.js';
import { serveGateway, type ServedGateway } from '../helpers/serve-gateway.js';

/**
 * Pipelines through `kiwi serve`'s wiring on a copy of the demo `.ai/`, on the offline demo
 * model (test/helpers/pipeline-project.ts): results handed on, a parallel group, a failure that
 * stops the rest, a cancel through the kernel, rights narrowed by the pipeline, and a real
 * `kiwi pipelines run` killed mid-stage and resumed.
 */

let root: string;
let served: ServedGateway;

beforeAll(async () => {
  root = copyDemoProject('kiwi-pipelines-');
  preparePipelineProject(root);
  served = await serveGateway(root);
}, 120_000);

afterAll(async () => {
  await served?.close();
  rmSync(root, { recursive: true, force: true });
});

const run = (pipeline: string, inputs: Record<string, unknown> = {}, events: PipelineEvent[] = [], signal?: AbortSignal) =>
  served.gateway.pipelines.run({ pipeline, inputs, client: 'local', onEvent: (e) => events.push(e), ...(signal ? { signal } : {}) });

const said = (events: PipelineEvent[]): string[] => events.map((e) => (e.type === 'run' ? 'run' : e.type === 'stage-start' ? `start ${e.stage}` : `end ${e.outcome.stage} ${e.outcome.status}`));

describe('a pipeline run', () => {
  it('runs a parallel group, then hands its results on; a completed run is not resumed', async () => {
    const outcome = await run('handoff', { topic: 'auth' });
    expect(outcome).toMatchObject({ pipeline: 'handoff', status: 'completed' });
    expect(outcome.stages.map((s) => [s.stage, s.status])).toEqual([['a', 'completed'], ['b', 'completed'], ['c', 'completed']]);
    const store = fileThreadStore(root);
    const [a, c] = await Promise.all([store.readHeader(outcome.stages[0]?.thread ?? ''), store.readHeader(outcome.stages[2]?.thread ?? '')]);
    expect(a).toMatchObject({ directive: 'release_note', inputs: { review: 'first on auth' }, pipeline: { run: outcome.run, name: 'handoff', stage: 'a', inputs: { topic: 'auth' } } });
    expect(c.inputs['review']).toBe(`A said: ${outcome.stages[0]?.result} / B completed`);
    expect(outcome.stages[0]?.result).toMatch(/Release note/);

    expect(await refusal(served.gateway.pipelines.resume({ run: outcome.run, client: 'local' }))).toBe(`CONFLICT: pipeline run ${outcome.run} completed; run the pipeline handoff again for a new run`);
    expect(await refusal(run('handoff'))).toBe('INVALID_INPUT: pipeline handoff needs --input topic=…');
    expect(await refusal(run('nope'))).toMatch(/^NOT_FOUND: no pipeline "nope"; the pipelines are .*handoff/);
  }, 60_000);

  it('stops at a stage that does not complete: its running sibling is cancelled, later stages do not run', async () => {
    const events: PipelineEvent[] = [];
    const outcome = await run('stops', {}, events);
    expect(outcome.status).toBe('failed');
    expect(outcome.stages.map((s) => [s.stage, s.status])).toEqual([['slow', 'cancelled'], ['quit', 'escalated'], ['after', 'not_run']]);
    // slow_step never ends on its own: it was running while give_up ran and ended, so they ran at once.
    const order = said(events);
    expect(order.indexOf('start slow')).toBeLessThan(order.indexOf('end quit escalated'));
    expect(order.indexOf('end quit escalated')).toBeLessThan(order.indexOf('end slow cancelled'));
    expect(order).not.toContain('start after');
    expect(outcome.stages[0]?.error).toMatch(/stage quit of pipeline stops ended escalated/);
  }, 60_000);

  it('gives a stage no more than the pipeline permits, whatever its directive declares', async () => {
    const [narrow, wide] = [await run('narrow'), await run('wide')];
    const result = async (thread: string | undefined): Promise<ThreadLine | undefined> => (await fileThreadStore(root).read(thread ?? '')).find((l) => l.type === 'result');
    expect(await result(narrow.stages[0]?.thread)).toMatchObject({ tool: 'read_file', status: 'denied', text: expect.stringMatching(/pipeline narrow.*read_file/) });
    expect(await result(wide.stages[0]?.thread)).toMatchObject({ tool: 'read_file', status: 'ok', text: expect.stringContaining('one two three') });
  }, 60_000);

  it('is cancelled through its kernel execution, which cancels its running stage; it is not resumed while it runs', async () => {
    const events: PipelineEvent[] = [];
    let started!: () => void;
    const stageStarted = new Promise<void>((resolve) => (started = resolve));
    const running = served.gateway.pipelines.run({ pipeline: 'held', client: 'local', onEvent: (e) => (events.push(e), e.type === 'stage-start' && started()) });
    await stageStarted;
    const runId = events[0]?.type === 'run' ? events[0].run : '';
    expect(await refusal(served.gateway.pipelines.resume({ run: runId, client: 'local' }))).toBe(`CONFLICT: pipeline run ${runId} is still running (stage slow); wait for it to end, or cancel it`);

    const base = `http://127.0.0.1:${served.server.port}`;
    const page = (await (await fetch(`${base}/v0/executions?label=${encodeURIComponent(`pipeline_run:${runId}`)}`)).json()) as { executions: { id: string; labels: Record<string, string> }[] };
    expect(page.executions).toHaveLength(1);
    expect(page.executions[0]?.labels).toMatchObject({ kind: 'pipeline', pipeline: 'held', client: 'local' });
    expect((await fetch(`${base}/v0/executions/${page.executions[0]?.id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(200);

    const outcome = await running;
    expect(outcome.status).toBe('cancelled');
    expect(outcome.stages.map((s) => [s.stage, s.status])).toEqual([['slow', 'cancelled'], ['after', 'not_run']]);
  }, 60_000);
});

describe('a pipeline run cut short', () => {
  it('is resumed after its process was killed mid-stage: the finished stage is reused, the cut one resumed in its own thread', async () => {
    const project = copyDemoProject('kiwi-pipelines-crash-');
    try {
      const { gate } = preparePipelineProject(project);
      const env = { PATH: process.env['PATH'], HOME: project, KIWI_USER_DIR: `${project}/no-user-tier` };
      const child = spawn(process.execPath, [...kiwiCli(), 'pipelines', 'run', 'gated_run', '--steps', '--project', project], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // Killed once the gated stage has asked for its tool, which waits for a gate nobody opens.
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('→ wait_for_gate')) resolve();
        });
        child.once('exit', () => reject(new Error(`kiwi pipelines run ended before its gated stage: ${out}`)));
      });
      child.kill('SIGKILL');
      await exited;
      const runId = /pipeline run ([0-9a-f-]{36}): gated_run/.exec(out)?.[1] ?? '';
      const firstThread = /\[first\] started: thread ([0-9a-f-]{36})/.exec(out)?.[1];
      const gateThread = /\[gate\] started: thread ([0-9a-f-]{36})/.exec(out)?.[1];

      const lines: string[] = [];
      const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l), write: () => undefined };
      const cli = (argv: string[]) => runCli([...argv, '--project', project], { env, cwd: project, io });
      expect(await cli(['pipelines', 'show', runId])).toBe(0);
      expect(lines.join('\n')).toMatch(new RegExp(`first  release_note  completed  thread ${firstThread}[\\s\\S]*gate  gated  cut_short  thread ${gateThread}`));

      writeFileSync(gate, '');
      lines.length = 0;
      expect(await cli(['pipelines', 'resume', runId])).toBe(0);
      const said = lines.filter((l) => /^(\[|pipeline run)/.test(l));
      expect(said).toEqual([
        `pipeline run ${runId}: gated_run`,
        expect.stringMatching(/^\[first\] completed before, reused: .*Release note/),
        `[gate] resumed: thread ${gateThread}`,
        expect.stringMatching(/^\[gate\] completed/),
        `pipeline run ${runId}: completed`,
      ]);
      const threads = (await fileThreadStore(project).list()).filter((t) => t.header.pipeline?.run === runId);
      expect(threads.map((t) => t.header.id).sort()).toEqual([firstThread, gateThread].sort());
      const gateLines = await fileThreadStore(project).read(gateThread ?? '');
      expect(gateLines.map((l) => l.type)).toContain('resume');
      expect(gateLines.find((l) => l.type === 'result' && l.status === 'ok')).toMatchObject({ tool: 'wait_for_gate', text: 'the gate is open' });
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  }, 120_000);
});
