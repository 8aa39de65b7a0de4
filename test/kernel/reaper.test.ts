import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../src/http/app.js';
import { listen, type Listener } from '../../src/http/listen.js';
import type { Kernel } from '../../src/kernel/open-kernel.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { openSse, type SseClient } from '../fixtures/kernel/sse-client.js';
import { executeScript, scriptedLoop } from '../fixtures/http-edges/scripted-loop.js';

/**
 * The kernel's watcher (V0-API.md §8.3, §11.3, §16) on a clock the test moves: a missed step
 * deadline (checklist item 31), an execution past its maximum duration, a blocked execution
 * whose agent is gone. Each pass is run by the test (`reaper.sweep()`), not on the 30 s beat.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-kernel-reaper-'));
const policyFile = path.join(dir, 'kernel-policy.yaml');
writeFileSync(
  policyFile,
  [
    'rules:',
    '  - { id: quick, priority: 1, when: { tool_id: slow }, then: { decision: allow, timeout_ms: 1000 } }',
    '  - { id: patient, priority: 2, when: { tool_id: patient }, then: { decision: allow, timeout_ms: 7200000 } }',
    '  - { id: others, priority: 3, then: { decision: allow } }',
    '',
  ].join('\n'),
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let clock = Date.parse('2026-11-23T10:00:00.000Z');
const now = (): Date => new Date(clock);

describe.each(kernelBackends({ policyFile, now, reaperIntervalMs: 0, executionTimeoutMs: 3_600_000 }))('on %s', (_backend, open) => {
  let kernel: Kernel;
  let stop: () => Promise<void> = async () => undefined;
  let server: Listener;
  const streams: SseClient[] = [];

  beforeAll(async () => {
    ({ kernel, stop } = await open());
    const app = createGatewayApp({ runLoop: scriptedLoop(executeScript).runLoop, models: () => [], health: () => ({}), kernel: async () => kernel });
    server = await listen((request, env) => app.fetch(request, env), { host: '127.0.0.1', port: 0 });
  }, 60_000);
  afterAll(async () => {
    for (const s of streams) s.close();
    await server?.close(100);
    await kernel?.close();
    await stop();
  });

  const post = async (p: string, body: unknown) => (await (await fetch(`${server.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as Record<string, unknown>;
  const log = async (id: string) => ((await (await fetch(`${server.url}/v0/executions/${id}/events`)).json()) as { events: { type: string; step_id?: string; payload: Record<string, unknown> }[] }).events;
  const status = async (id: string) => ((await (await fetch(`${server.url}/v0/executions/${id}`)).json()) as { status: string }).status;

  async function started() {
    const agent = `agent-${Math.random().toString(36).slice(2)}`;
    const stream = await openSse(`${server.url}/v0/agents/stream?agent_id=${agent}&consumer_id=${agent}-c`);
    streams.push(stream);
    const id = (await post('/v0/executions', { agent_id: agent }))['id'] as string;
    const session = ((await stream.next('execution.assigned')).data as { session_id: string }).session_id;
    const intent = (body: unknown) => post('/v0/agents/intent', { execution_id: id, session_id: session, intent: body });
    return { agent, stream, id, session, intent };
  }

  it('fails an execution whose step missed its deadline, cancelling the steps beside it', async () => {
    const a = await started();
    const slow = (await a.intent({ type: 'invoke_tool', tool_id: 'slow' }))['step_id'] as string;
    const other = (await a.intent({ type: 'invoke_tool', tool_id: 'read_file' }))['step_id'] as string;
    clock += 500;
    await kernel.reaper.sweep();
    expect(await status(a.id)).toBe('running');
    clock += 1000;
    await kernel.reaper.sweep();
    expect(await status(a.id)).toBe('failed');
    expect((await log(a.id)).slice(-3).map((e) => [e.type, e.step_id, e.payload])).toEqual([
      ['step.timed_out', slow, {}],
      ['step.cancelled', other, { reason: 'sibling step timed out' }],
      ['execution.failed', undefined, { error: 'step timed out' }],
    ]);
  });

  it('fails an execution past its maximum duration', async () => {
    const a = await started();
    await a.intent({ type: 'invoke_tool', tool_id: 'patient' });
    clock += 3_600_001;
    await kernel.reaper.sweep();
    expect(await status(a.id)).toBe('failed');
    expect((await log(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['step.cancelled', { reason: 'execution timed out' }],
      ['execution.failed', { error: 'execution exceeded maximum duration' }],
    ]);
  });

  it('keeps a blocked execution blocked when its agent goes, then puts it back to pending once no connection of that agent is left', async () => {
    const a = await started();
    await a.intent({ type: 'wait', signal_type: 'go' });
    a.stream.close();
    await expect.poll(() => kernel.agents.connected(a.agent)).toBe(false);
    expect(await status(a.id)).toBe('blocked');
    // Its session is dropped a moment after the connection; the pass after that resets it.
    await expect.poll(async () => (await kernel.reaper.sweep(), await status(a.id))).toBe('pending');
    expect((await log(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['agent.timeout', { session_id: '' }],
      ['execution.reset', { reason: 'recovery', from_status: 'blocked' }],
    ]);
  });
});
