import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
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
 * stops the rest, a cancel through the kernel, rights narrowed by the pipeline, a real
 * `kiwi pipelines run` killed mid-stage and resumed, and MCP clients of two keys running
 * pipelines through /mcp's `execute`, each seeing only its own runs.
 */

let root: string;
let served: ServedGateway;
/** ops: admin; alpha: a client; beta: a client whose own policy lists git_status only. */
const keys = { ops: '', alpha: '', beta: '' };

beforeAll(async () => {
  root = copyDemoProject('kiwi-pipelines-');
  preparePipelineProject(root);
  mkdirSync(path.join(root, '.ai', 'config', 'clients'), { recursive: true });
  writeFileSync(path.join(root, '.ai', 'config', 'clients', 'beta.yaml'), 'version: 1\ntools: [git_status]\n');
  const file = path.join(root, KEY_FILE);
  keys.ops = (await createKey(file, 'ops', { roles: ['admin'] })).key;
  keys.alpha = (await createKey(file, 'alpha')).key;
  keys.beta = (await createKey(file, 'beta', { policy: '.ai/config/clients/beta.yaml' })).key;
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

  it('stops at a stage whose thread completed after its last call failed, and runs that stage again in a new thread on resume', async () => {
    const outcome = await run('narrow');
    expect(outcome.status).toBe('failed');
    expect(outcome.stages.map((s) => [s.stage, s.status, s.failure])).toEqual([
      ['words', 'completed', 'denied'],
      ['after', 'not_run', undefined],
    ]);
    const again = await served.gateway.pipelines.resume({ run: outcome.run, client: 'local' });
    expect(again.stages.map((s) => [s.stage, s.status, s.failure])).toEqual(outcome.stages.map((s) => [s.stage, s.status, s.failure]));
    expect(again.stages[0]?.thread).not.toBe(outcome.stages[0]?.thread);
  }, 60_000);

  it('is cancelled through its kernel execution, which cancels its running stage; it is not resumed while it runs', async () => {
    const events: PipelineEvent[] = [];
    let started!: () => void;
    const stageStarted = new Promise<void>((resolve) => (started = resolve));
    const running = served.gateway.pipelines.run({ pipeline: 'held', client: 'local', onEvent: (e) => (events.push(e), e.type === 'stage-start' && started()) });
    await stageStarted;
    const runId = events[0]?.type === 'run' ? events[0].run : '';
    expect(await refusal(served.gateway.pipelines.resume({ run: runId, client: 'local' }))).toBe(`CONFLICT: pipeline run ${runId} is still running (stage slow); wait for it to end, or cancel it`);

    const page = await executionsOf(runId, keys.ops);
    expect(page.executions).toHaveLength(1);
    expect(page.executions[0]?.labels).toMatchObject({ kind: 'pipeline', pipeline: 'held', client: 'local' });
    const cancel = await fetch(`${served.server.url}/v0/executions/${page.executions[0]?.id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.ops}` }, body: '{}' });
    expect(cancel.status).toBe(200);

    const outcome = await running;
    expect(outcome.status).toBe('cancelled');
    expect(outcome.stages.map((s) => [s.stage, s.status])).toEqual([['slow', 'cancelled'], ['after', 'not_run']]);
  }, 60_000);
});

/** The executions labelled with a pipeline run, as the key's client sees them through /v0. */
async function executionsOf(run: string, key: string): Promise<{ executions: { id: string; status: string; labels: Record<string, string> }[] }> {
  const response = await fetch(`${served.server.url}/v0/executions?label=${encodeURIComponent(`pipeline_run:${run}`)}`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as { executions: { id: string; status: string; labels: Record<string, string> }[] };
}

describe('pipelines over MCP', () => {
  const clients: Partial<Record<'alpha' | 'beta', Client>> = {};

  beforeAll(async () => {
    for (const who of ['alpha', 'beta'] as const) {
      const client = new Client({ name: `pipelines-${who}`, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keys[who]}` } } }));
      clients[who] = client;
    }
  });

  afterAll(async () => {
    for (const client of Object.values(clients)) await client?.close();
  });

  const execute = async (who: 'alpha' | 'beta', args: Record<string, unknown>): Promise<CallToolResult & { structuredContent: Record<string, any> }> => {
    const result = (await clients[who]?.callTool({ name: 'execute', arguments: { item_type: 'pipeline', ...args } })) as CallToolResult;
    return { ...result, structuredContent: (result.structuredContent ?? {}) as Record<string, any> };
  };
  const text = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');
  const refused = async (who: 'alpha' | 'beta', args: Record<string, unknown>): Promise<string> => {
    const result = await execute(who, args);
    expect(result.isError, text(result)).toBe(true);
    return text(result);
  };
  const stages = (body: Record<string, any>): string[][] => (body['stages'] as { stage: string; status: string }[]).map((s) => [s.stage, s.status]);

  it('runs one as the calling client and answers its outcome; its execution and threads are that client\'s', async () => {
    const result = await execute('alpha', { action: 'run', item_id: 'handoff', parameters: { topic: 'mcp' } });
    expect(result.isError, text(result)).toBeFalsy();
    const run = result.structuredContent;
    expect(run).toMatchObject({ pipeline: 'handoff', status: 'completed', run: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(stages(run)).toEqual([['a', 'completed'], ['b', 'completed'], ['c', 'completed']]);
    const header = await fileThreadStore(root).readHeader(run['stages'][0].thread);
    expect(header).toMatchObject({ client: 'alpha', inputs: { review: 'first on mcp' }, pipeline: { run: run['run'], stage: 'a' } });

    // The execution's end is written behind the answer: a loaded machine may show it a moment later.
    await expect.poll(async () => (await executionsOf(run['run'], keys.alpha)).executions, { timeout: 15_000 }).toEqual([expect.objectContaining({ status: 'completed', labels: expect.objectContaining({ kind: 'pipeline', pipeline: 'handoff', client: 'alpha' }) })]);
    expect((await executionsOf(run['run'], keys.beta)).executions).toEqual([]);

    const status = await execute('alpha', { action: 'status', item_id: run['run'] });
    expect(status.structuredContent).toMatchObject({ run: run['run'], pipeline: 'handoff', inputs: { topic: 'mcp' }, status: 'completed' });
    expect(stages(status.structuredContent)).toEqual([['a', 'completed'], ['b', 'completed'], ['c', 'completed']]);
    expect(status.structuredContent['stages'][2]).toMatchObject({ directive: 'release_note', thread: run['stages'][2].thread, result: run['stages'][2].result });
    expect(await refused('alpha', { action: 'resume', item_id: run['run'] })).toBe(`CONFLICT: pipeline run ${run['run']} completed; run the pipeline handoff again for a new run`);
  }, 60_000);

  it('with async answers the run id at once; status follows it, cancel stops it, resume goes on with it: only for the client that ran it', async () => {
    const started = await execute('alpha', { action: 'run', item_id: 'held', async: true });
    expect(started.isError, text(started)).toBeFalsy();
    expect(started.structuredContent).toEqual({ run: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'running' });
    const id = started.structuredContent['run'] as string;
    const running = await execute('alpha', { action: 'status', item_id: id });
    expect(running.structuredContent).toMatchObject({ run: id, pipeline: 'held', status: 'running' });
    expect(stages(running.structuredContent)).toEqual([['slow', 'running'], ['after', 'waiting']]);

    // Another client's run is no run at all: the same answer as an id nobody used.
    const unused = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff0009';
    for (const action of ['status', 'cancel', 'resume']) {
      expect(await refused('beta', { action, item_id: id }), action).toBe(`NOT_FOUND: no pipeline run ${id} of client beta`);
      expect(await refused('beta', { action, item_id: unused }), action).toBe(`NOT_FOUND: no pipeline run ${unused} of client beta`);
    }
    expect(await refused('alpha', { action: 'resume', item_id: id })).toMatch(new RegExp(`^CONFLICT: pipeline run ${id} is still running`));

    const cancelling = await execute('alpha', { action: 'cancel', item_id: id });
    expect(cancelling.structuredContent).toMatchObject({ run: id, status: 'cancelling' });
    const ended = async (): Promise<Record<string, any>> => (await execute('alpha', { action: 'status', item_id: id })).structuredContent;
    await expect.poll(async () => (await ended())['status'], { timeout: 30_000 }).toBe('cancelled');
    expect(stages(await ended())).toEqual([['slow', 'cancelled'], ['after', 'not_run']]);
    expect(await refused('alpha', { action: 'cancel', item_id: id })).toBe(`CONFLICT: pipeline run ${id} is not running; "resume" goes on with it`);

    // Resumed: the cancelled stage goes on in its own thread (and is cancelled again, since it never ends).
    const thread = (await ended())['stages'][0].thread as string;
    const resumed = await execute('alpha', { action: 'resume', item_id: id, async: true });
    expect(resumed.structuredContent).toEqual({ run: id, status: 'running' });
    const again = await execute('alpha', { action: 'status', item_id: id });
    expect(again.structuredContent['stages'][0]).toMatchObject({ stage: 'slow', thread, status: 'running' });
    expect((await execute('alpha', { action: 'cancel', item_id: id })).structuredContent).toMatchObject({ status: 'cancelling' });
    await expect.poll(async () => (await ended())['status'], { timeout: 30_000 }).toBe('cancelled');
    expect((await fileThreadStore(root).read(thread)).map((l) => l.type)).toContain('resume');
  }, 90_000);

  it("gives a stage no more than the caller's own rights: a key whose policy lists git_status only cannot read through a pipeline", async () => {
    const read = async (who: 'alpha' | 'beta'): Promise<{ client: string; result: ThreadLine | undefined }> => {
      const thread = (await execute(who, { action: 'run', item_id: 'wide' })).structuredContent['stages'][0].thread as string;
      return { client: (await fileThreadStore(root).readHeader(thread)).client, result: (await fileThreadStore(root).read(thread)).find((l) => l.type === 'result') };
    };
    expect(await read('beta')).toMatchObject({ client: 'beta', result: { tool: 'read_file', status: 'denied' } });
    expect(await read('alpha')).toMatchObject({ client: 'alpha', result: { tool: 'read_file', status: 'ok', text: expect.stringContaining('one two three') } });
  }, 60_000);

  it('refuses bad names, inputs and ids, saying how to fix them', async () => {
    expect(await refused('alpha', { action: 'run', item_id: 'nope' })).toMatch(/^NOT_FOUND: no pipeline "nope"; the pipelines are .*handoff/);
    const missing = await execute('alpha', { action: 'run', item_id: 'handoff' });
    expect(text(missing)).toBe('INVALID_INPUT: pipeline handoff needs topic (string); call it again with parameters={"topic": …}');
    expect(missing.structuredContent['missing_inputs']).toEqual([expect.objectContaining({ name: 'topic', required: true })]);
    expect(await refused('alpha', { action: 'run', item_id: 'handoff', parameters: { topic: 'x', fokus: 'y' } })).toBe('INVALID_INPUT: pipeline handoff has no input "fokus"; its inputs are topic');
    expect(await refused('alpha', { action: 'status', item_id: 'handoff' })).toMatch(/^INVALID_INPUT: item_id "handoff" is not a pipeline run id: "status" takes the id that "run" answered/);
    expect(await refused('alpha', { action: 'stream', item_id: 'handoff' })).toMatch(/^INVALID_INPUT: action "stream" does not act on a pipeline/);
    expect(await refused('alpha', { action: 'run', item_id: 'handoff', parameters: { topic: 'x' }, environment: 'env' })).toMatch(/^INVALID_INPUT: environment is for a directive's "run"/);
    expect(await refused('alpha', { action: 'cancel', item_id: '0195aaaa-bbbb-4ccc-8ddd-eeeeffff0009', async: true })).toMatch(/^INVALID_INPUT: async is for "run" and "resume"/);
  });
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
