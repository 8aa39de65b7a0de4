import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { EXECUTION_ID_HEADER } from '../../src/http/chat/chat-handler.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import type { ThreadLine } from '../../src/threads/thread-store.js';
import { allowTools, copyDemoProject } from '../helpers/demo-project.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { serveGateway, type ServedGateway } from '../helpers/serve-gateway.js';

/**
 * What executions and threads used, through the whole gateway on 127.0.0.1 and its embedded
 * kernel database: the upstream replays recorded OpenAI streams (openai-plain reports 24 input and
 * 7 output tokens); gateway.yaml prices `gpt-*` at $1000 per million tokens and not `llama-*`.
 * Then the gateway is closed and opened again on the same database, and the CLI and an MCP
 * client read what was kept.
 */

let llm: ReplayLlmServer;
let root: string;
let served: ServedGateway;

const PRICED = 1000 / 1_000_000;

const directive = (name: string, permissions: string[]): string => `# ${name}

\`\`\`xml
<directive name="${name}" version="1.0.0">
  <metadata>
    <description>${name}</description>
    <model tier="balanced"/>
    <limits spawns="1"/>
    <permissions>
${permissions.map((p) => `      ${p}`).join('\n')}
    </permissions>
  </metadata>
  <process><step name="${name}"><description>Do it</description></step></process>
</directive>
\`\`\`
`;

beforeAll(async () => {
  llm = await startReplayLlmServer();
  root = copyDemoProject('kiwi-usage-');
  writeFileSync(
    path.join(root, '.ai', 'config', 'gateway.yaml'),
    [
      'upstreams:',
      `  - { name: recorded, kind: openai, base_url: "${llm.url}/v1", models: ["gpt-*", "llama-*"] }`,
      'model_tiers: { balanced: gpt-4o-mini }',
      'prices:',
      '  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }',
    ].join('\n'),
  );
  writeFileSync(path.join(root, '.ai', 'directives', 'outer.md'), directive('outer', ['<execute resource="tool" id="inner_thread"/>', '<execute resource="spawn" action="thread"/>']));
  writeFileSync(path.join(root, '.ai', 'directives', 'inner.md'), directive('inner', []));
  writeFileSync(path.join(root, '.ai', 'tools', 'project', 'llm_runtime.yaml'), 'tool_id: llm_runtime\ntool_type: runtime\nexecutor: http_client\nversion: "1.0.0"\ndescription: "Runtime for spawning LLM threads"\n');
  writeFileSync(path.join(root, '.ai', 'tools', 'project', 'inner_thread.yaml'), 'tool_id: inner_thread\ntool_type: thread\nexecutor: llm_runtime\nversion: "1.0.0"\ndescription: "Spawn the inner thread"\nconfig:\n  directive: inner\n');
  allowTools(root, ['inner_thread']);
  served = await serveGateway(root);
}, 120_000);

afterAll(async () => {
  await served?.close();
  await llm?.close();
  rmSync(root, { recursive: true, force: true });
});

/** A chat answered by openai-plain; the id of the execution that records it. */
async function chat(model: string): Promise<string> {
  llm.replyOnce('openai-plain');
  const response = await fetch(`${served.server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: false, messages: [{ role: 'user', content: 'What is the capital of France?' }] }),
  });
  expect(response.status).toBe(200);
  await response.json();
  const id = response.headers.get(EXECUTION_ID_HEADER);
  if (id === null) throw new Error('the chat was not recorded as an execution');
  return id;
}

/** The execution as /v0 shows it, once it has ended (the journal writes behind the chat). */
async function ended(id: string): Promise<Record<string, unknown>> {
  let execution: Record<string, unknown> = {};
  await expect
    .poll(async () => {
      execution = (await (await fetch(`${served.server.url}/v0/executions/${id}`)).json()) as Record<string, unknown>;
      return execution['usage'] !== undefined;
    })
    .toBe(true);
  return execution;
}

async function cli(argv: string[]): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runCli(argv, { env: { ...served.env, PATH: process.env['PATH'] }, cwd: root, io: { out: (l) => out.push(l), err: () => undefined } });
  return { code, out };
}

const ids: { priced?: string; unpriced?: string; parent?: string; child?: string; parentExecution?: string } = {};

describe('what an execution used', () => {
  it("a chat's execution has the model's tokens and their spend from the price table", async () => {
    ids.priced = await chat('gpt-4o-mini');
    const execution = await ended(ids.priced);
    expect(execution['usage']).toEqual({ models: { 'gpt-4o-mini': { input_tokens: 24, output_tokens: 7, spend_usd: expect.closeTo(31 * PRICED, 10) } }, spend_usd: expect.closeTo(31 * PRICED, 10) });
    // The spec's fields are as they were; usage is the gateway's own beside them.
    expect(Object.keys(execution).sort()).toEqual(['agent_id', 'created_at', 'id', 'input', 'labels', 'status', 'updated_at', 'usage']);
    const page = (await (await fetch(`${served.server.url}/v0/executions?label=kind:chat&limit=10`)).json()) as { executions: { id: string; usage?: unknown }[] };
    expect(page.executions.find((e) => e.id === ids.priced)?.usage).toEqual(execution['usage']);
  });

  it('says "unpriced" for a model the price table does not price, and leaves it out of the total', async () => {
    ids.unpriced = await chat('llama-3.1-8b');
    expect((await ended(ids.unpriced))['usage']).toEqual({ models: { 'llama-3.1-8b': { input_tokens: 24, output_tokens: 7, spend_usd: 'unpriced' } }, spend_usd: 0, unpriced: ['llama-3.1-8b'] });
  });

  it("a thread's usage is its own and its child thread's (own + children), in its outcome, transcript and execution", async () => {
    llm.replyOnce(openAiStream(['Delegating. [TOOL: inner_thread {}]'], { usage: [10, 5] }), openAiStream(['Inner done.'], { usage: [20, 8] }), openAiStream(['Outer done.'], { usage: [10, 5] }));
    const outcome = await served.gateway.threads.run({ directive: 'outer', client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', result: 'Outer done.' });
    const lines = await fileThreadStore(root).read(outcome.id);
    const spawned = lines.find((l): l is Extract<ThreadLine, { type: 'result' }> => l.type === 'result');
    const child = JSON.parse(spawned?.text ?? '{}') as { thread: string };
    ids.parent = outcome.id;
    ids.child = child.thread;
    const gpt = (input: number, output: number) => ({ models: { 'gpt-4o-mini': { input_tokens: input, output_tokens: output, spend_usd: expect.closeTo((input + output) * PRICED, 10) } }, spend_usd: expect.closeTo((input + output) * PRICED, 10) });
    const expected = { ...gpt(40, 18), own: gpt(20, 10), children: gpt(20, 8) };
    expect(outcome.usage).toEqual(expected);
    expect(lines.at(-1)).toMatchObject({ type: 'end', usage: expected });
    const childLines = await fileThreadStore(root).read(child.thread);
    expect(childLines.at(-1)).toMatchObject({ type: 'end', usage: gpt(20, 8) });

    const page = (await (await fetch(`${served.server.url}/v0/executions?label=thread:${outcome.id}&limit=10`)).json()) as { executions: { id: string }[] };
    ids.parentExecution = page.executions[0]?.id;
    expect((await ended(ids.parentExecution ?? ''))['usage']).toEqual(expected);
  }, 60_000);
});

describe('after the gateway is opened again on the same database', () => {
  beforeAll(async () => {
    await served.close();
    served = await serveGateway(root);
  }, 120_000);

  it('the executions still say what they used, and `kiwi executions show` prints it', async () => {
    const priced = await ended(ids.priced ?? '');
    expect(priced['usage']).toMatchObject({ models: { 'gpt-4o-mini': { input_tokens: 24, output_tokens: 7 } } });
    const shown = await cli(['executions', 'show', ids.priced ?? '', '--url', served.server.url]);
    expect(shown.code).toBe(0);
    expect(shown.out.at(-1)).toBe('used: gpt-4o-mini 24 in / 7 out $0.0310; total $0.0310');
    const unpriced = await cli(['executions', 'show', ids.unpriced ?? '', '--url', served.server.url]);
    expect(unpriced.out.at(-1)).toBe('used: llama-3.1-8b 24 in / 7 out unpriced; total $0.0000 + unpriced llama-3.1-8b');
    const thread = await cli(['executions', 'show', ids.parentExecution ?? '', '--url', served.server.url]);
    expect(thread.out.at(-1)).toBe('used: gpt-4o-mini 40 in / 18 out $0.0580; total $0.0580 (own + children)');
  });

  it("an MCP client's execute(action=\"status\") of the thread says what it used", async () => {
    const client = new Client({ name: 'usage-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`)));
    try {
      const result = (await client.callTool({ name: 'execute', arguments: { item_type: 'directive', action: 'status', item_id: ids.parent } })) as { structuredContent?: Record<string, unknown> };
      expect(result.structuredContent).toMatchObject({ status: 'completed', usage: { models: { 'gpt-4o-mini': { input_tokens: 40, output_tokens: 18 } }, own: { spend_usd: expect.closeTo(30 * PRICED, 10) }, children: { spend_usd: expect.closeTo(28 * PRICED, 10) } } });
    } finally {
      await client.close();
    }
  });

  it("the console's execution and thread pages show it by model", async () => {
    // The keyless local operator (loopback, no keys) is given a session at the login page.
    const first = await fetch(`${served.server.url}/ui/login`, { redirect: 'manual' });
    const cookie = first.headers.get('set-cookie')?.split(';')[0] ?? '';
    const text = async (route: string): Promise<string> => {
      const res = await fetch(`${served.server.url}${route}`, { headers: { cookie }, redirect: 'manual' });
      expect(res.status).toBe(200);
      return (await res.text()).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
    };
    expect(await text(`/ui/executions/${ids.unpriced}`)).toContain('Used Model Input tokens Output tokens Spend llama-3.1-8b 24 7 unpriced Total $0.0000, and the unpriced tokens of llama-3.1-8b');
    expect(await text(`/ui/threads/${ids.parent}`)).toContain('Used (own + children) Model Input tokens Output tokens Spend gpt-4o-mini 40 18 $0.0580 Total $0.0580; its own $0.0300, the threads it spawned $0.0280');
  });

  it('`kiwi threads show` ends with what the thread used, own + children', async () => {
    const shown = await cli(['threads', 'show', ids.parent ?? '', '--project', root]);
    expect(shown.code).toBe(0);
    expect(shown.out.at(-2)).toMatch(/^ended .*: completed, 1 step\(s\)$/);
    expect(shown.out.at(-1)).toBe('used: gpt-4o-mini 40 in / 18 out $0.0580; total $0.0580 (own + children)');
  });
});
