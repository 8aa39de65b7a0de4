import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { copyDemoProject } from '../helpers/demo-project.js';
import { haproxyAvailable, startHaproxy, type Haproxy } from '../helpers/haproxy.js';
import { startKiwiServe, type KiwiServeProcess } from '../helpers/kiwi-serve-process.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { postgresAvailable, type PostgresServer } from '../helpers/postgres-server.js';
import { redisAvailable } from '../helpers/redis-server.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { postgresDatabase, redisForTest } from '../helpers/run-resources.js';
import { openPostgresDb } from '../../src/store/sql/postgres-db.js';
import type { SqlDb } from '../../src/store/sql/sql-db.js';
import { addShipRelease, addStamp, chatThatWaits } from '../helpers/waiting-chat.js';

/**
 * Three `kiwi serve` processes on one project folder, one Postgres and one Redis, behind HAProxy
 * (round robin, no stickiness), as DESIGN §7 deploys replicas. Every request below goes through
 * HAProxy, so consecutive requests land on different replicas; the shared audit log (one session
 * per replica process) shows that they did. The numbers are the (24).
 */
describe.skipIf(!haproxyAvailable() || !redisAvailable() || !postgresAvailable())('three replicas behind HAProxy', () => {
  let root: string;
  let llm: ReplayLlmServer;
  let postgres: PostgresServer;
  let redis: Awaited<ReturnType<typeof redisForTest>>;
  let replicas: KiwiServeProcess[] = [];
  let balancer: Haproxy;
  let env: Record<string, string>;
  let db: SqlDb;
  let opsKey = '';

  beforeAll(async () => {
    [llm, postgres, redis] = await Promise.all([startReplayLlmServer(), postgresDatabase(), redisForTest()]);
    root = copyDemoProject('kiwi-replicas-');
    rmSync(path.join(root, '.ai', 'state', 'kernel'), { recursive: true, force: true }); // the kernel is in Postgres
    // Each recorded answer reports 10 input and 5 output tokens; client local may use 1500: room for a
    // chat cut short below, which is charged an estimate of its whole prompt (about 550 tokens).
    // A gateway silent for 3 s is taken for dead (check 6), instead of 45 s.
    writeFileSync(
      path.join(root, '.ai', 'config', 'gateway.yaml'),
      `upstreams:\n  - { name: recorded, kind: openai, base_url: "${llm.url}/v1", models: ["gpt-*"] }\nprices:\n  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }\nbudgets:\n  clients:\n    local: { tokens: 1500 }\n    ops: { tokens: 100000000 }\nkernel:\n  instance_timeout_ms: 3000\n`,
    );
    const policy = path.join(root, '.ai', 'config', 'policy.yaml');
    writeFileSync(policy, readFileSync(policy, 'utf8').replace('per_tool: { "*": { max: 60, per_ms: 60000 } }', 'per_tool: { word_count: { max: 3, per_ms: 3600000 }, stamp: { max: 100000, per_ms: 60000 }, "*": { max: 60, per_ms: 60000 } }').replace(/per_client: \{[^}]*\}/, 'per_client: { max: 100000, per_ms: 60000 }'));
    addShipRelease(root);
    addStamp(root);
    env = { DATABASE_URL: postgres.url, REDIS_URL: redis.url, KIWI_REDIS_PREFIX: redis.prefix };
    replicas = await Promise.all([0, 1, 2].map(() => startKiwiServe(root, { env })));
    balancer = await startHaproxy(replicas);
    db = await openPostgresDb(postgres.url, { maxConnections: 2 });
  }, 120_000);

  afterAll(async () => {
    await balancer?.stop();
    for (const r of replicas) r.child.kill('SIGKILL');
    await db?.close();
    await Promise.allSettled([llm?.close(), postgres?.stop(), redis?.stop()]);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** The replicas (one audit session each) that wrote a record of `tool` to the shared audit log. */
  const replicasThatRan = async (tool: string): Promise<number> => Number((await db.query<{ n: string }>('select count(distinct session) as n from audit_records where tool = $1', [tool]))[0]?.n);

  const openai = (key = 'unused') => new OpenAI({ baseURL: `${balancer.url}/v1`, apiKey: key, maxRetries: 0 });

  it('1. a client limited to 3 calls of a tool an hour gets exactly 3, spread over the replicas', async () => {
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) {
      llm.replyOnce(openAiStream(['Counting: [TOOL: word_count {"path": "README.md"}]']), openAiStream(['Done.']));
      const done = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `count ${i}` }] });
      answers.push(done.choices[0]?.message.content ?? '');
    }
    const limited = answers.filter((a) => /rate limit for tool `word_count` \(3 per 3600000 ms\) is used up/.test(a));
    expect(limited).toHaveLength(2);
    expect(await replicasThatRan('word_count')).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('3. an approval waiting on one replica is answered through another, and a cancel through another stops a chat', async () => {
    const granted = await chatThatWaits(balancer.url, llm, 'v1');
    const signal = await fetch(`${balancer.url}/v0/executions/${granted.executionId}/signal`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ signal_type: 'step.approve', payload: { step_id: granted.stepId, approved: true } }) });
    expect(signal.status).toBe(200);
    expect(await granted.rest).toMatch(/shipped v1[\s\S]*Done\./);

    const cancelled = await chatThatWaits(balancer.url, llm, 'v2');
    expect((await fetch(`${balancer.url}/v0/executions/${cancelled.executionId}/cancel`, { method: 'POST' })).status).toBe(200);
    expect(await cancelled.rest).toMatch(/was cancelled/);
  }, 60_000);

  it('4. a legacy MCP session opened through one replica works through the others (the real SDK client)', async () => {
    const client = new Client({ name: 'replicas-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${balancer.url}/mcp`));
    await client.connect(transport);
    try {
      expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      // Round robin: these land on the other replicas, which have never seen the session.
      for (let i = 0; i < 4; i++) {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toContain('execute');
      }
      const result = (await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'word_count', parameters: { path: 'README.md' } } })) as { content: { text: string }[]; isError?: boolean };
      expect(result.content.map((c) => c.text).join('\n')).toMatch(/rate limit for tool `word_count`|"words"/);
      await transport.terminateSession();
      // Closed through one replica, it is gone on all of them.
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${balancer.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': transport.sessionId ?? 'none', 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) });
        expect(res.status).toBe(404);
      }
    } finally {
      await client.close();
    }
  }, 60_000);

  it('4. a client of MCP 2026-07-28 works with no session at all, its approval wait followed on whichever replica each round reaches (the real SDK 2.x client)', async () => {
    const sessions: Array<string | null> = [];
    const transport = new ModernTransport(new URL(`${balancer.url}/mcp`), {
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        sessions.push(response.headers.get('mcp-session-id'));
        return response;
      },
    });
    const client = new ModernClient({ name: 'replicas-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport);
    try {
      for (let i = 0; i < 4; i++) expect((await client.listTools()).tools.map((t) => t.name)).toContain('execute');
      // The call waits for a person on the replica that ran it; each later round lands on another replica, which reads the kernel.
      const call = { name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'ship_release', parameters: { version: 'v4' } } };
      const first = (await client.callTool(call, { allowInputRequired: true })) as unknown as { resultType: string; requestState: string; _meta: Record<string, string> };
      expect(first.resultType).toBe('input_required');
      const executionId = first._meta['kiwi.gateway/execution_id'] as string;
      const stepId = /kiwi approvals grant ([0-9a-f-]{36})/.exec(first._meta['kiwi.gateway/waiting'] ?? '')?.[1] as string;
      const signal = await fetch(`${balancer.url}/v0/executions/${executionId}/signal`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ signal_type: 'step.approve', payload: { step_id: stepId, approved: true } }) });
      expect(signal.status).toBe(200);
      const texts: string[] = [];
      for (let i = 0; i < 3; i++) {
        const round = (await client.callTool({ ...call, requestState: first.requestState } as unknown as Parameters<ModernClient['callTool']>[0], { allowInputRequired: true })) as { content?: { text: string }[] };
        texts.push((round.content ?? []).map((c) => c.text).join(''));
      }
      // Round robin: one round reached the replica that ran the call, the other two read the kernel's record; each answered the result.
      expect(texts).toEqual([expect.stringContaining('shipped v4'), expect.stringContaining('shipped v4'), expect.stringContaining('shipped v4')]);
      expect(sessions.every((h) => h === null)).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('2. a token budget holds across the replicas', async () => {
    llm.reply(openAiStream(['ok']));
    let served = 0;
    let refusal: string | undefined;
    for (let i = 0; i < 150 && refusal === undefined; i++) {
      const res = await fetch(`${balancer.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
      if (res.status === 429) refusal = ((await res.json()) as { error: { message: string } }).error.message;
      else {
        expect(res.status).toBe(200);
        await res.text();
        served++;
      }
    }
    // 1500 tokens at 15 a turn, less what the chats above used: at most 100 requests in all, over three replicas.
    // A chat cut short above (the cancelled one) was charged an estimate; the message says how much.
    expect(refusal).toMatch(/^Client "local" is over its token budget: \d+ tokens (\(\d+ of them estimated\) )?of 1500 tokens/);
    expect(served).toBeLessThanOrEqual(100);
    expect(Number(/: (\d+) tokens/.exec(refusal ?? '')?.[1])).toBeGreaterThanOrEqual(1500);
  }, 60_000);

  // Last: once a key exists, every request needs one.
  it('5. a key made with `kiwi keys create` works on every replica at once', async () => {
    const out: string[] = [];
    expect(await runCli(['keys', 'create', 'ops', '--role', 'client,agent', '--agent', 'heir', '--project', root], { env: { PATH: process.env['PATH'], ...env }, cwd: root, io: { out: (l) => out.push(l), err: () => undefined } })).toBe(0);
    const key = (opsKey = out[0] ?? '');
    // Each replica, asked directly, knows the key at once: it serves ops, not the local operator
    // whose chats ran above (ops sees none of them); and within its next look, that keys are now needed.
    for (const replica of replicas) {
      const listed = await fetch(`${replica.url}/v0/executions`, { headers: { authorization: `Bearer ${key}` } });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { executions: unknown[] }).executions).toEqual([]);
    }
    for (const replica of replicas) await expect.poll(async () => (await fetch(`${replica.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${balancer.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
  });

  // Last of all: it kills a replica.
  it('6. a replica killed under load loses no audit record, execution or charge, and another takes over its executions', async () => {
    const [doomed, heirReplica] = replicas as [KiwiServeProcess, KiwiServeProcess];
    const auth = { authorization: `Bearer ${opsKey}` };
    // An agent's execution held by the doomed replica, and another consumer of that agent elsewhere.
    const held = await sseEvents(`${doomed.url}/v0/agents/stream?agent_id=heir&consumer_id=doomed-1`, opsKey);
    const created = await fetch(`${doomed.url}/v0/executions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: 'heir', input: { job: 1 } }) });
    const execution = ((await created.json()) as { id: string }).id;
    expect((await held.next('execution.assigned', 10_000))['execution_id']).toBe(execution);
    const heir = await sseEvents(`${heirReplica.url}/v0/agents/stream?agent_id=heir&consumer_id=heir-1`, opsKey);
    // Chats certainly in flight on the doomed replica when it dies: they wait for a person.
    const waiting = [];
    for (const version of ['v6a', 'v6b']) {
      llm.forgetQueued(); // the answer after an approval, which a chat cut short never takes
      waiting.push(await chatThatWaits(doomed.url, llm, version, opsKey));
    }
    llm.forgetQueued();

    // The load: six clients' streamed chats through the balancer, each turn calling `stamp` with an id of its own or ending.
    for (let k = 0; k < 400; k++) llm.replyOnce(openAiStream([`Stamping. [TOOL: stamp {"id": "s${k}"}]`]), openAiStream(['Done.']));
    const chats: { executionId: string | null; done: boolean }[] = [];
    let stop = false;
    const worker = async (): Promise<void> => {
      while (!stop) {
        try {
          const res = await fetch(`${balancer.url}/v1/chat/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'stamp one' }] }) });
          const chat = { executionId: res.headers.get('x-kiwi-execution-id'), done: false };
          chats.push(chat);
          chat.done = res.status === 200 && (await res.text()).includes('data: [DONE]');
        } catch {
          // Cut when its replica died: the record of what it did is checked below.
        }
      }
    };
    const completed = (): number => chats.filter((c) => c.done).length;
    const workers = Array.from({ length: 6 }, worker);
    await expect.poll(completed, { timeout: 30_000 }).toBeGreaterThanOrEqual(10);
    doomed.child.kill('SIGKILL');
    const before = completed();
    await expect.poll(completed, { timeout: 30_000 }).toBeGreaterThanOrEqual(before + 10);
    stop = true;
    await Promise.all(workers);
    held.close();

    // Another replica takes over the agent's execution once the doomed one has been silent 3 s.
    const again = await heir.next('execution.assigned', 20_000);
    expect(again['execution_id']).toBe(execution);
    heir.close();
    // Every execution a client was shown is there: ended as the client saw, or ended with the
    // replica (failed; completed when its end was written just before the kill cut the stream).
    const shown = [...chats.filter((c) => c.executionId !== null), ...waiting.map((w) => ({ executionId: w.executionId, done: false }))];
    const statusOf = async (id: string): Promise<string> => {
      const res = await fetch(`${balancer.url}/v0/executions/${id}`, { headers: auth });
      expect(res.status).toBe(200);
      return ((await res.json()) as { status: string }).status;
    };
    for (const chat of shown) {
      if (chat.done) expect(await statusOf(chat.executionId as string)).toBe('completed');
      else await expect.poll(() => statusOf(chat.executionId as string), { timeout: 20_000 }).toMatch(/^(failed|cancelled|completed)$/);
    }
    expect(await Promise.all(waiting.map((w) => w.rest))).toEqual([expect.stringMatching(/terminated|socket|closed|Error/i), expect.stringMatching(/terminated|socket|closed|Error/i)]);

    // Every call whose result went back to the model has its audit record, whichever replica ran it.
    const resultsSeen = new Set(llm.requests.flatMap((r) => [...r.rawBody.matchAll(/stamped (s\d+)/g)].map((m) => m[1] as string)));
    const audited = new Set((await db.query<{ line: string }>("select line from audit_records where tool = 'stamp' and decision = 'allow'")).map((r) => (JSON.parse(r.line) as { args: { id: string } }).args.id));
    expect(resultsSeen.size).toBeGreaterThan(10);
    expect([...resultsSeen].filter((id) => !audited.has(id))).toEqual([]);

    // Every turn of a chat the client saw finish is charged, whichever replica served it.
    const turnsOf = async (id: string): Promise<number> => {
      const res = await fetch(`${balancer.url}/v0/executions/${id}/events`, { headers: auth });
      const completedEvent = ((await res.json()) as { events: { type: string; payload: { output?: { turns?: number } } }[] }).events.find((e) => e.type === 'execution.completed');
      return completedEvent?.payload.output?.turns ?? NaN;
    };
    let finishedTurns = 0;
    for (const chat of chats.filter((c) => c.done)) finishedTurns += await turnsOf(chat.executionId as string);
    const charged = Number((await db.query<{ turns: string }>("select coalesce(sum(turns), 0) as turns from budget_usage where client = 'ops'"))[0]?.turns);
    expect(finishedTurns).toBeGreaterThan(10);
    expect(charged).toBeGreaterThanOrEqual(finishedTurns);
  }, 120_000);
});

/** A `/v0` event stream read one named event at a time. */
async function sseEvents(url: string, key: string): Promise<{ next(name: string, timeoutMs: number): Promise<Record<string, unknown>>; close(): void }> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, signal: controller.signal });
  expect(res.status).toBe(200);
  const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  return {
    async next(name, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (/^event: (.*)$/m.exec(block)?.[1] === name && data !== undefined) return JSON.parse(data) as Record<string, unknown>;
          continue;
        }
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${name} event within ${timeoutMs} ms`)), Math.max(0, deadline - Date.now()))));
        const chunk = await Promise.race([reader.read(), late]).finally(() => clearTimeout(timer));
        if (chunk.done) throw new Error(`the stream ended before a ${name} event`);
        buffer += chunk.value;
      }
    },
    close: () => controller.abort(),
  };
}
