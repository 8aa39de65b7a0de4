import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiCompletion, openAiStream } from '../helpers/openai-sse.js';
import { processAlive } from '../../src/base/process-alive.js';
import { addSlowTool, readSlowPid } from '../helpers/slow-tool.js';

/**
 * Every chat through the gateway is a kernel execution: its id comes back in a header, its
 * events tell the story (intent, call, decision, result), and cancelling it stops the chat,
 * upstream and tools included. The gateway is the one `kiwi serve` runs, on a copy of the demo
 * `.ai/`; the upstream is a local server replaying recorded streams.
 */

let served: DemoGateway;
let url: string;

interface WireEvent {
  sequence: number;
  type: string;
  step_id?: string;
  payload: Record<string, unknown>;
}

beforeAll(async () => {
  served = await serveDemoGateway({
    prepare: (root) => void addSlowTool(root),
  });
  url = served.server.url;
}, 120_000);

afterAll(async () => {
  await served?.close();
});

async function events(id: string): Promise<WireEvent[]> {
  const res = await fetch(`${url}/v0/executions/${id}/events`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: WireEvent[] }).events;
}

/** The events once the chat's end is written (the journal writes behind the chat). */
async function story(id: string): Promise<WireEvent[]> {
  await expect.poll(async () => (await events(id)).at(-1)?.type, { timeout: 10_000 }).toMatch(/^execution\.(completed|failed|cancelled)$/);
  return events(id);
}

async function chat(content: string): Promise<{ id: string; text: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }) });
  expect(res.status).toBe(200);
  const id = res.headers.get('x-kiwi-execution-id');
  expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return { id: id as string, text: body.choices[0]?.message.content ?? '' };
}

describe('a chat through the gateway', () => {
  it('is an execution whose events tell the intent, the call it resolved to, and the result', async () => {
    served.llm.replyOnce(openAiStream(['Counting. [TOOL: word_count {"path": "READ', 'ME.md"}]']), openAiStream(['The README has ', '4 words.']));
    const { id, text } = await chat('How many words are in the README?');
    expect(text).toContain('The README has 4 words.');
    const log = await story(id);
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.completed', 'turn.started', 'execution.completed']);
    expect(log.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(log[0]?.payload).toMatchObject({ agent_id: 'gateway', input: { model: 'gpt-4o-mini', mode: 'execute', messages: 1, last_user_message: 'How many words are in the README?' }, labels: { kind: 'chat', client: 'local', endpoint: '/v1/chat/completions' } });
    expect(log[2]?.payload).toMatchObject({ intent_type: 'invoke_tool', details: { tool_id: 'word_count', arguments: { path: 'README.md' }, intent: 'word_count {"path": "README.md"}' } });
    expect(log[3]).toMatchObject({ type: 'step.created', payload: { tool_id: 'word_count', arguments: { path: 'README.md' }, max_attempts: 1, attempt: 1 } });
    expect(log[4]?.step_id).toBe(log[3]?.step_id);
    expect(String(log[4]?.payload['result'])).toMatch(/"words": 4/);
    // The proxy's id of the call: its audit record's.
    expect(log[4]?.payload['call_id']).toEqual(expect.any(String));
    expect(log[2]?.payload).toMatchObject({ details: { candidates: [{ tool: 'word_count', score: expect.any(Number) }] } });
    expect(log[5]?.payload).toEqual({ turn: 2 });
    expect(log[6]?.payload).toMatchObject({ output: { finish_reason: 'stop', turns: 2, tool_calls: 1 } });
    expect(String((log[6]?.payload['output'] as { text: string }).text)).toContain('The README has 4 words.');

    const execution = (await (await fetch(`${url}/v0/executions/${id}`)).json()) as Record<string, unknown>;
    expect(execution).toMatchObject({ id, status: 'completed', agent_id: 'gateway', labels: { kind: 'chat' } });
    const listed = (await (await fetch(`${url}/v0/executions?label=kind:chat&status=completed`)).json()) as { executions: { id: string }[] };
    expect(listed.executions.map((e) => e.id)).toContain(id);
  }, 30_000);

  it('records a call the policy denies as a failed step that says so', async () => {
    served.llm.replyOnce(openAiStream(['Reading. [TOOL: read_file {"path": "/etc/passwd"}]']), openAiStream(['That file is off limits.']));
    const { id } = await chat('read /etc/passwd');
    const log = await story(id);
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.failed', 'turn.started', 'execution.completed']);
    expect(log[4]?.payload).toMatchObject({ retryable: false, denied: true });
    expect(String(log[4]?.payload['error'])).toMatch(/denied.*outside the project root/);
  }, 30_000);

  it('records an intent it could not resolve', async () => {
    // No tool fits well: the request's own model is asked in a side request, and declines.
    served.llm.replyOnce(openAiStream(['[TOOL: teleport the build server to the moon]']), openAiCompletion({ content: 'None of these teleports anything.' }), openAiStream(['I cannot do that.']));
    const { id } = await chat('move the server');
    const log = await story(id);
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.unresolved', 'turn.started', 'execution.completed']);
    expect(log[2]?.payload).toMatchObject({ intent: 'teleport the build server to the moon' });
    expect(String(log[2]?.payload['reason'])).not.toBe('');
  }, 30_000);

  it('stops when its execution is cancelled: the stream ends with the reason, the tool process ends, the open step is cancelled', async () => {
    const pidFile = path.join(served.root, '.ai', 'tools', 'project', 'slow.pid');
    rmSync(pidFile, { force: true });
    served.llm.replyOnce(openAiStream(['Waiting. [TOOL: wait_for_batch {}]']));
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'is the batch done?' }] }).withResponse();
    const id = response.headers.get('x-kiwi-execution-id') as string;
    const reading = (async () => {
      for await (const chunk of stream) void chunk;
    })().then(
      () => undefined,
      (error: unknown) => error,
    );
    await expect.poll(() => existsSync(pidFile), { timeout: 15_000 }).toBe(true);
    const pid = readSlowPid(pidFile);

    const cancelled = await fetch(`${url}/v0/executions/${id}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ id, status: 'cancelled' });
    expect(String(await reading)).toMatch(/execution .* was cancelled/);
    await expect.poll(() => processAlive(pid), { timeout: 10_000 }).toBe(false);

    const log = await story(id);
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.cancelled', 'execution.cancelled']);
    expect(log[4]?.payload).toEqual({ reason: 'execution cancelled' });
    expect(log[5]?.payload).toEqual({ reason: 'cancelled by request' });
    // Cancelled once: a second cancel is the spec's conflict.
    expect((await fetch(`${url}/v0/executions/${id}/cancel`, { method: 'POST' })).status).toBe(409);
  }, 60_000);

  it('is read while it runs, and cancelled when its client goes away', async () => {
    served.llm.replyOnce({ recording: openAiStream(['Thinking about it, slowly.']), stallAfterChunks: 2 });
    const controller = new AbortController();
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', signal: controller.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'think' }] }) });
    const id = res.headers.get('x-kiwi-execution-id') as string;
    await res.body?.getReader().read();
    // Held in memory while it runs (chat-journal.ts holdMs), it is written by the read.
    const running = await fetch(`${url}/v0/executions/${id}`);
    expect(await running.json()).toMatchObject({ id, status: 'running' });
    const listed = (await (await fetch(`${url}/v0/executions?label=message:think`)).json()) as { executions: unknown[] };
    expect(listed.executions).toContainEqual(expect.objectContaining({ id, status: 'running' }));
    controller.abort();
    const log = await story(id);
    expect(log.at(-1)).toMatchObject({ type: 'execution.cancelled', payload: { reason: 'client disconnected' } });
  }, 30_000);
});

describe('an MCP call on the gateway', () => {
  it('is an execution too: execute and resolve, each tool call they make a step, the execution named in the result', async () => {
    const client = new Client({ name: 'kernel-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
    try {
      const ran = await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'word_count', parameters: { path: 'README.md' } } });
      const id = (ran._meta as Record<string, string>)['kiwi.gateway/execution_id'] as string;
      const log = await story(id);
      expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.completed', 'execution.completed']);
      expect(log[0]?.payload).toMatchObject({ agent_id: 'gateway', input: { tool: 'execute', arguments: { item_id: 'word_count' } }, labels: { kind: 'mcp', tool: 'execute', client: 'local' } });
      expect(log[3]?.payload).toMatchObject({ tool_id: 'word_count', arguments: { path: 'README.md' } });
      expect(String(log[4]?.payload['result'])).toMatch(/"words": 4/);
      expect(log[5]?.payload).toMatchObject({ output: { is_error: false } });

      const shown = await client.callTool({ name: 'resolve', arguments: { intent: 'word_count {"path": "README.md"}', execute: false } });
      const shownLog = await story((shown._meta as Record<string, string>)['kiwi.gateway/execution_id'] as string);
      expect(shownLog.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'execution.completed']);

      const resolved = await client.callTool({ name: 'resolve', arguments: { intent: 'word_count {"path": "README.md"}' } });
      const resolvedLog = await story((resolved._meta as Record<string, string>)['kiwi.gateway/execution_id'] as string);
      expect(resolvedLog.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.completed', 'execution.completed']);
      expect(resolvedLog[2]?.payload).toMatchObject({ details: { tool_id: 'word_count', intent: 'word_count {"path": "README.md"}' } });
    } finally {
      await client.close();
    }
  }, 30_000);
});

describe('a gateway with kernel settings: record_chats off, one live execution per client', () => {
  let off: DemoGateway;
  beforeAll(async () => {
    off = await serveDemoGateway({ config: 'kernel: { record_chats: false, max_live_executions_per_client: 1 }\n' });
  }, 60_000);
  afterAll(() => off?.close());

  it('records nothing and sends no execution id', async () => {
    const res = await fetch(`${off.server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'kiwi-demo', messages: [{ role: 'user', content: 'hello' }] }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-kiwi-execution-id')).toBeNull();
    await res.json();
    const listed = (await (await fetch(`${off.server.url}/v0/executions?label=kind:chat`)).json()) as { executions: unknown[] };
    expect(listed.executions).toEqual([]);
  });

  it("reaches the kernel's quota: the second live execution of a client is refused (kernel-bounds.int.test.ts tests the quota itself)", async () => {
    const create = () => fetch(`${off.server.url}/v0/executions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: 'nobody' }) });
    expect((await create()).status).toBe(201);
    const refused = await create();
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^quota exceeded: client "[^"]+" has 1 executions not ended, .*kernel\.max_live_executions_per_client/);
  });
});
