import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDemoProject } from '../helpers/demo-project.js';
import { addSlowTool, readSlowPid } from '../helpers/slow-tool.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { openSse, type SseClient } from '../fixtures/kernel/sse-client.js';
import { startKiwiServe, type KiwiServeProcess } from '../helpers/kiwi-serve-process.js';
import { serveGateway } from '../helpers/serve-gateway.js';

/**
 * `kiwi serve` killed with SIGKILL while an agent's execution and a chat are under way, then a
 * gateway opened again on the same project (in the test's process): nothing accepted or reported
 * is lost (each transition was one committed transaction in the embedded database), the agent's
 * open step is cancelled and its execution goes back to pending for the agent to take again, and
 * the chat, whose client went with the process, fails.
 */

let root: string;
let llm: ReplayLlmServer;
const children: ChildProcessWithoutNullStreams[] = [];
const streams: SseClient[] = [];
let toolPid: number | undefined;
let pidFile: string;

beforeAll(async () => {
  llm = await startReplayLlmServer();
  root = copyDemoProject('kiwi-crash-');
  writeFileSync(path.join(root, '.ai', 'config', 'gateway.yaml'), `upstreams:\n  - { name: recorded, kind: openai, base_url: "${llm.url}/v1", models: ["gpt-*"] }\n`);
  writeFileSync(path.join(root, '.ai', 'config', 'kernel-policy.yaml'), 'rules:\n  - { id: all, priority: 1, then: { decision: allow } }\n');
  pidFile = addSlowTool(root);
});

afterAll(async () => {
  for (const s of streams) s.close();
  for (const child of children) child.kill('SIGKILL');
  if (toolPid !== undefined) {
    try {
      process.kill(toolPid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await llm?.close();
  rmSync(root, { recursive: true, force: true });
});

/** `kiwi serve` as a process of its own on the project; killed after the file if still running. */
async function serve(): Promise<KiwiServeProcess> {
  const started = await startKiwiServe(root);
  children.push(started.child);
  return started;
}

const post = async (url: string, body: unknown): Promise<Record<string, unknown>> => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${JSON.stringify(answer)}`);
  return answer;
};

const events = async (url: string, id: string): Promise<{ type: string; step_id?: string; payload: Record<string, unknown> }[]> =>
  ((await (await fetch(`${url}/v0/executions/${id}/events`)).json()) as { events: { type: string; step_id?: string; payload: Record<string, unknown> }[] }).events;

describe('a gateway killed with SIGKILL', () => {
  it('loses no accepted intent or reported result; at restart the open step is cancelled, the execution pending again, the chat failed', async () => {
    const first = await serve();
    // An agent: one step reported, one accepted and still open.
    const agent = await openSse(`${first.url}/v0/agents/stream?agent_id=crash-agent&consumer_id=c-1`);
    streams.push(agent);
    const execution = (await post(`${first.url}/v0/executions`, { agent_id: 'crash-agent', input: { q: 'x' } }))['id'] as string;
    const session = ((await agent.next('execution.assigned', 30_000)).data as { session_id: string }).session_id;
    const intent = (body: unknown) => post(`${first.url}/v0/agents/intent`, { execution_id: execution, session_id: session, intent: body });
    const reported = (await intent({ type: 'invoke_tool', tool_id: 'lookup', arguments: { n: 1 } }))['step_id'] as string;
    await post(`${first.url}/v0/agents/step-result`, { execution_id: execution, session_id: session, step_id: reported, success: true, data: { found: 42 } });
    const open = (await intent({ type: 'invoke_tool', tool_id: 'lookup', arguments: { n: 2 } }))['step_id'] as string;

    // A chat whose tool is running.
    llm.replyOnce(openAiStream(['Waiting. [TOOL: wait_for_batch {}]']));
    const controller = new AbortController();
    const chat = await fetch(`${first.url}/v1/chat/completions`, { method: 'POST', signal: controller.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'is the batch done?' }] }) });
    const chatId = chat.headers.get('x-kiwi-execution-id') as string;
    await expect.poll(() => existsSync(pidFile), { timeout: 30_000 }).toBe(true);
    toolPid = readSlowPid(pidFile);
    // The chat's story so far is written behind it: wait until it is there.
    await expect.poll(async () => (await events(first.url, chatId)).map((e) => e.type), { timeout: 10_000 }).toContain('step.created');

    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    controller.abort();
    agent.close();

    const second = await serveGateway(root);
    const url = second.server.url;
    try {
      const log = await events(url, execution);
      expect(log.map((e) => e.type)).toEqual([
        'execution.created',
        'execution.started',
        'intent.accepted',
        'step.created',
        'step.completed',
        'intent.accepted',
        'step.created',
        'step.cancelled',
        'execution.reset',
      ]);
      expect(log[4]).toMatchObject({ step_id: reported, payload: { result: { found: 42 } } });
      expect(log[6]?.step_id).toBe(open);
      expect(log[7]).toMatchObject({ step_id: open, payload: { reason: 'agent disconnected' } });
      expect(log[8]?.payload).toEqual({ reason: 'recovery', from_status: 'running' });
      expect(((await (await fetch(`${url}/v0/executions/${execution}`)).json()) as { status: string }).status).toBe('pending');

      // The agent comes back and gets it again, with its history.
      const back = await openSse(`${url}/v0/agents/stream?agent_id=crash-agent&consumer_id=c-1`);
      streams.push(back);
      const again = (await back.next('execution.assigned', 30_000)).data as { execution_id: string; history: { step_id: string; status: string }[] };
      expect(again.execution_id).toBe(execution);
      expect(again.history.map((h) => [h.step_id, h.status])).toEqual([
        [reported, 'succeeded'],
        [open, 'cancelled'],
      ]);

      const chatLog = await events(url, chatId);
      expect(chatLog.slice(-2)).toMatchObject([
        { type: 'step.cancelled', payload: { reason: 'gateway stopped' } },
        { type: 'execution.failed', payload: { error: 'the gateway stopped before the chat ended' } },
      ]);
    } finally {
      await second.close();
    }
  }, 240_000);
});
