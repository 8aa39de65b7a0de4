import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../src/http/server/app.js';
import { listen, type Listener } from '../../src/http/server/listen.js';
import { createChatJournal } from '../../src/kernel/chat-journal.js';
import { openKernel, type Kernel } from '../../src/kernel/open-kernel.js';
import { executeScript, scriptedLoop } from '../fixtures/http-edges/scripted-loop.js';
import { openSse, type SseClient, type SseEventIn } from '../fixtures/kernel/sse-client.js';
import { postgresAvailable } from '../helpers/postgres-server.js';
import { postgresDatabase } from '../helpers/run-resources.js';

/**
 * Two gateways on one Postgres server, each with its own agents and runners connected, racing
 * for the same work: every execution is assigned once and every job is sent once (row locks,
 * `FOR UPDATE SKIP LOCKED`), however their connects and queue scans interleave.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-kernel-shared-'));
const policyFile = path.join(dir, 'kernel-policy.yaml');
writeFileSync(policyFile, 'rules:\n  - { id: all, priority: 1, then: { decision: allow } }\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Gateway {
  kernel: Kernel;
  server: Listener;
}

describe.runIf(postgresAvailable() || process.env['KIWI_REQUIRE_POSTGRES'] === '1')('two gateways on one Postgres server', () => {
  let stopPostgres: () => Promise<void> = async () => undefined;
  let databaseUrl = '';
  const gateways: Gateway[] = [];
  const streams: SseClient[] = [];

  beforeAll(async () => {
    const server = await postgresDatabase();
    stopPostgres = server.stop;
    databaseUrl = server.url;
    for (let i = 0; i < 2; i++) {
      const kernel = await openKernel({ root: '/nonexistent', databaseUrl: server.url, policyFile, reaperIntervalMs: 0, queueIntervalMs: 0 });
      const app = createGatewayApp({ runLoop: scriptedLoop(executeScript).runLoop, models: () => ({ models: [] }), health: () => ({}), kernel: async () => kernel });
      gateways.push({ kernel, server: await listen((request, env) => app.fetch(request, env), { host: '127.0.0.1', port: 0 }) });
    }
  }, 60_000);
  afterAll(async () => {
    for (const s of streams) s.close();
    for (const g of gateways) {
      await g.server.close(100);
      await g.kernel.close();
    }
    await stopPostgres();
  });

  const post = async (g: Gateway, p: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${g.server.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const answer = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${p}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const sse = async (g: Gateway, p: string): Promise<SseClient> => {
    const s = await openSse(`${g.server.url}${p}`);
    streams.push(s);
    return s;
  };
  /** Every `event` a stream sends until it has been quiet for a moment. */
  async function drain(stream: SseClient, event: string): Promise<SseEventIn[]> {
    const out: SseEventIn[] = [];
    for (;;) {
      try {
        out.push(await stream.next(event, 500));
      } catch {
        return out;
      }
    }
  }
  const a = (): Gateway => gateways[0] as Gateway;
  const b = (): Gateway => gateways[1] as Gateway;

  it('assigns each pending execution once when agents connect to both and both scan at once', async () => {
    const agent = `shared-${Math.random().toString(36).slice(2, 8)}`;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await post(i % 2 === 0 ? a() : b(), '/v0/executions', { agent_id: agent, input: { i } }))['id'] as string);
    // Both connect at once: each gateway assigns the pending executions to its own connection.
    const consumers = await Promise.all([sse(a(), `/v0/agents/stream?agent_id=${agent}&consumer_id=a-1`), sse(b(), `/v0/agents/stream?agent_id=${agent}&consumer_id=b-1`)]);
    await Promise.all([a().kernel.reaper.sweep(), b().kernel.reaper.sweep(), a().kernel.reaper.sweep(), b().kernel.reaper.sweep()]);
    const assigned = (await Promise.all(consumers.map((c) => drain(c, 'execution.assigned')))).flat().map((e) => (e.data as { execution_id: string }).execution_id);
    expect(assigned.sort()).toEqual([...ids].sort());
    for (const id of ids) {
      const res = await fetch(`${a().server.url}/v0/executions/${id}/events`);
      const types = ((await res.json()) as { events: { type: string }[] }).events.map((e) => e.type);
      expect(types).toEqual(['execution.created', 'execution.started']);
    }
  }, 60_000);

  it('sends each queued job once when runners of both gateways scan the queue at once', async () => {
    const agent = `jobs-${Math.random().toString(36).slice(2, 8)}`;
    const tool = `crawl_${Math.random().toString(36).slice(2, 8)}`;
    const stream = await sse(a(), `/v0/agents/stream?agent_id=${agent}&consumer_id=${agent}-c`);
    const steps: string[] = [];
    for (let i = 0; i < 8; i++) {
      const id = (await post(a(), '/v0/executions', { agent_id: agent }))['id'] as string;
      const session = ((await stream.next('execution.assigned')).data as { session_id: string }).session_id;
      const answer = await post(a(), '/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'invoke_tool', tool_id: tool, arguments: { i }, remote: true } });
      steps.push(answer['step_id'] as string);
    }
    // No runner yet: all eight are queued. Two runner connections on each gateway.
    const runners = await Promise.all(['ra', 'rb'].flatMap((r, i) => [1, 2].map((n) => sse(i === 0 ? a() : b(), `/v0/runners/stream?runner_id=${r}&consumer_id=${r}-${n}&capabilities=${tool}`))));
    const received: string[] = [];
    while (received.length < steps.length) {
      await Promise.all([a().kernel.runners.dispatchQueued(), b().kernel.runners.dispatchQueued(), a().kernel.runners.dispatchQueued(), b().kernel.runners.dispatchQueued()]);
      const jobs = await Promise.all(runners.map((r) => r.next('job.assigned', 2_000).then((e) => e.data as { id: string; execution_id: string; step_id: string }, () => undefined)));
      const got = jobs.filter((j) => j !== undefined);
      expect(got.length).toBeGreaterThan(0);
      for (const [i, job] of jobs.entries()) {
        if (job === undefined) continue;
        received.push(job.step_id);
        const runner = i < 2 ? 'ra' : 'rb';
        await post(i < 2 ? a() : b(), `/v0/runners/${runner}/results`, { job_id: job.id, execution_id: job.execution_id, step_id: job.step_id, success: true, data: { by: runner } });
      }
    }
    expect(received.sort()).toEqual([...steps].sort());
    // Nothing more comes: no job went out twice.
    await Promise.all([a().kernel.runners.dispatchQueued(), b().kernel.runners.dispatchQueued()]);
    for (const r of runners) expect(await drain(r, 'job.assigned')).toEqual([]);
  }, 60_000);

  it("recovers what a gateway gone silent held: its agents' executions back to pending and handed to another, its chats failed", async () => {
    // A third gateway whose clock is a minute behind: its one heartbeat is already too old.
    const silent = await openKernel({ root: '/nonexistent', databaseUrl, policyFile, reaperIntervalMs: 0, queueIntervalMs: 0, heartbeatIntervalMs: 0, now: () => new Date(Date.now() - 60_000) });
    const app = createGatewayApp({ runLoop: scriptedLoop(executeScript).runLoop, models: () => ({ models: [] }), health: () => ({}), kernel: async () => silent });
    const listener = await listen((request, env) => app.fetch(request, env), { host: '127.0.0.1', port: 0 });
    const c: Gateway = { kernel: silent, server: listener };
    try {
      const agent = `orphan-${Math.random().toString(36).slice(2, 8)}`;
      const stream = await sse(c, `/v0/agents/stream?agent_id=${agent}&consumer_id=c-1`);
      const id = (await post(c, '/v0/executions', { agent_id: agent }))['id'] as string;
      const session = ((await stream.next('execution.assigned')).data as { session_id: string }).session_id;
      const step = (await post(c, '/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'invoke_tool', tool_id: 'lookup', arguments: {} } }))['step_id'] as string;
      const journal = createChatJournal({ write: (w) => silent.writeChats(w), intervalMs: 60_000 });
      const chat = journal.begin({ client: 'local', agentId: 'gateway', input: {}, labels: { kind: 'chat' }, onCancel: () => undefined });
      chat.record([{ type: 'step.created', stepId: `s-${chat.id}`, payload: {} }], { id: `s-${chat.id}`, toolId: 't', arguments: '{}', status: 'running', deadline: '2099-01-01T00:00:00.000Z' });
      await journal.flush();

      // Another gateway's watcher, with the same agent connected to it.
      const heir = await sse(b(), `/v0/agents/stream?agent_id=${agent}&consumer_id=b-1`);
      await b().kernel.reaper.sweep();
      const again = (await heir.next('execution.assigned')).data as { execution_id: string; history: { step_id: string; status: string }[] };
      expect(again.execution_id).toBe(id);
      expect(again.history).toMatchObject([{ step_id: step, status: 'cancelled' }]);
      const log = await b().kernel.executions.events(id, 0, 100);
      expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.cancelled', 'execution.reset', 'execution.started']);
      expect(log.slice(-3).map((e) => e.payload)).toEqual([{ reason: 'agent disconnected' }, { reason: 'recovery', from_status: 'running' }, expect.objectContaining({ consumer_id: 'b-1' })]);
      const chatLog = (await b().kernel.executions.events(chat.id, 0, 100)).map((e) => [e.type, e.payload]);
      expect(chatLog.slice(-2)).toEqual([
        ['step.cancelled', { reason: 'gateway stopped' }],
        ['execution.failed', { error: 'the gateway stopped before the chat ended' }],
      ]);
      // The live gateways were not taken for dead: the sessions they hold are still there.
      const live = await a().kernel.executions.list({ status: 'running', limit: 100 });
      expect(live.executions.length).toBeGreaterThan(1);
      await journal.close();
    } finally {
      await listener.close(100);
      await silent.close();
    }
  }, 60_000);
});
