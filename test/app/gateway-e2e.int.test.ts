import Anthropic from '@anthropic-ai/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { loadResolverModel, offeredGates } from '../../src/resolver/learned-model.js';
import { runCli } from '../../src/app/run-cli.js';
import { openGateway, type Gateway } from '../../src/app/open-gateway.js';
import { listen, type Listener } from '../../src/http/server/listen.js';
import { openAiCompletion, openAiStream } from '../helpers/openai-sse.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { processAlive } from '../../src/base/process-alive.js';
import { addSlowTool, readSlowPid } from '../helpers/slow-tool.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { inspect, toolNames } from '../helpers/mcp-inspector.js';

/**
 * The whole gateway as `kiwi serve` wires it, on a copy of the demo `.ai/`: real resolver
 * (USE-lite, LanceDB), real tool proxy and tools, the real `openai`, `@anthropic-ai/sdk` and MCP
 * SDK clients over 127.0.0.1. The upstream LLM is the one thing that cannot run here: a local
 * server replays OpenAI streams written in the API's wire format.
 */

let root: string;
let llm: ReplayLlmServer;
let gateway: Gateway;
let server: Listener;
let served: DemoGateway | undefined;
let env: Record<string, string | undefined>;
/** The first upstream of the `fo-*` models, killed by the failover test; the replay server `llm` is its fallback. */
let doomed: ReplayLlmServer;

beforeAll(async () => {
  doomed = await startReplayLlmServer();
  served = await serveDemoGateway({
    prepare: (dir) => void addSlowTool(dir),
    upstreams: (url) => [
      `{ name: stalling, kind: openai, base_url: "${url}/v1", models: ["stall-*"], timeout_ms: 1000 }`,
      `{ name: recorded, kind: openai, base_url: "${url}/v1", models: ["gpt-*"] }`,
      `{ name: doomed, kind: openai, base_url: "${doomed.url}/v1", models: ["fo-*"], fallbacks: [spare] }`,
      `{ name: spare, kind: openai, base_url: "${url}/v1", models: ["fo-*"] }`,
    ],
  });
  ({ gateway, server, env, llm, root } = served);
}, 120_000);

afterAll(async () => {
  await served?.close();
  await doomed.close();
});

const INTENT_TURN = ['I will count the words in the README now. [TO', 'OL: count the words in "READ', 'ME.md"]'];
const EXACT_TURN = ['Exactly, then: [TOOL: word_co', 'unt {"path": "READ', 'ME.md"}]'];

describe('upstream failover', () => {
  it('serves a chat from the fallback once the first upstream is killed, and /v1/models names the one that is down', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used' });
    const chat = async (): Promise<string> => {
      const stream = await client.chat.completions.create({ model: 'fo-1', stream: true, messages: [{ role: 'user', content: 'Who answers?' }] });
      let content = '';
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
      return content;
    };
    doomed.replyOnce(openAiStream(['the first upstream']));
    expect(await chat()).toBe('the first upstream');
    await doomed.close();
    llm.replyOnce(openAiStream(['the fallback']));
    expect(await chat()).toBe('the fallback');
    const models = (await (await fetch(`${server.url}/v1/models`)).json()) as { unavailable_upstreams?: { name: string; error: string }[] };
    expect(models.unavailable_upstreams?.find((u) => u.name === 'doomed')).toMatchObject({ error: expect.stringMatching(/refused/) });
  });
});

describe('the gateway with the real openai client', () => {
  it('asks back a call from plain words its own model declines, runs the exact call the agent restates, and continues upstream with the result', async () => {
    // The rules are not sure of the plain words: the request's own model is asked in a side request first, and declines.
    llm.replyOnce(openAiStream(INTENT_TURN), openAiCompletion({ content: 'No function fits.' }), openAiStream(EXACT_TURN), openAiStream(['The README has ', '4 words.']));
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used' });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'How many words are in the README?' }] });
    let content = '';
    const kiwi: { type: string }[] = [];
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      const extra = (chunk as unknown as { kiwi?: { type: string } }).kiwi;
      if (extra) kiwi.push(extra);
    }
    expect(content).toContain('I will count the words in the README now. [TOOL: count the words in "README.md"]');
    expect(content).toContain('→ word_count {"path":"README.md"}');
    expect(content).toMatch(/"words": 4/);
    expect(content).toContain('The README has 4 words.');
    expect(kiwi.map((e) => e.type)).toEqual(['start', 'intent', 'unresolved', 'turn', 'intent', 'call', 'result', 'turn', 'finish']);

    // The side request went to the same upstream and model, with the closest tools as functions.
    const side = (llm.requests.at(-3)?.body ?? {}) as { model: string; tools: { function: { name: string } }[] };
    expect(side.model).toBe('gpt-4o-mini');
    expect(side.tools.map((t) => t.function.name)).toContain('word_count');
    // Turn 2 went upstream with the question: the closest tool's schema, the value found, the exact form asked for.
    const second = (llm.requests.at(-2)?.body ?? {}) as { messages: { role: string; content: string }[] };
    expect(second.messages[0]?.role).toBe('system');
    expect(second.messages[0]?.content).toContain('[TOOL:');
    expect(second.messages.at(-1)?.content).toMatch(/write it exactly as word_count[\s\S]*call it exactly: \[TOOL: word_count \{"path": "README\.md"\}\]/);
    // Turn 3 went upstream with the tool's real output.
    const third = (llm.requests.at(-1)?.body ?? {}) as { messages: { role: string; content: string }[] };
    expect(third.messages.at(-2)?.content).toContain('[TOOL: word_count {"path": "README.md"}]');
    expect(third.messages.at(-1)?.content).toMatch(/word_count[\s\S]*"words": 4/);

    await gateway.project.audit.flush();
    const audited = await readAuditTail({ dir: gateway.project.auditDir, limit: 10, session: gateway.project.session });
    expect(audited.some((r) => r.tool === 'word_count' && r.decision === 'allow' && r.source === 'gateway')).toBe(true);
  });

  it('hands the call to the client as a native tool call in resolve-only mode, running nothing', async () => {
    llm.replyOnce(openAiStream(EXACT_TURN));
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used' });
    const before = llm.requests.length;
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini+resolve-only', messages: [{ role: 'user', content: 'How many words are in the README?' }] });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function.name : undefined).toBe('word_count');
    expect(call?.type === 'function' ? JSON.parse(call.function.arguments) : undefined).toEqual({ path: 'README.md' });
    expect(llm.requests.length).toBe(before + 1);
  });

  it('answers an unknown model with a 404 the client understands', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(String((error as Error).message)).toMatch(/no-such-model/);
  });
});

describe('failures on the way', () => {
  it('ends the stream with an error the client raises when the upstream stalls mid-stream', async () => {
    llm.replyOnce({ recording: openAiStream(['Hello', ' there', ' my', ' friend']), stallAfterChunks: 3 });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'stall-model', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let content = '';
    const error = await (async () => {
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    expect(content).toBe('Hello there');
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String((error as Error).message)).toMatch(/stalling|127\.0\.0\.1/);
  });

  it('answers a streaming request that the upstream refuses with the upstream status, not a 200 stream', async () => {
    llm.replyOnce({ status: 429 });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
  });

  it("passes the upstream's Retry-After on with its 429, to the OpenAI and the Anthropic client", async () => {
    llm.replyOnce({ status: 429, headers: { 'retry-after': '7', 'retry-after-ms': '6500' } }, { status: 429, headers: { 'retry-after': '7' } });
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const limited = await openai.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('7');
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after-ms')).toBe('6500');
    const anthropic = new Anthropic({ baseURL: server.url, apiKey: 'not-used', maxRetries: 0 });
    const refused = await anthropic.messages.create({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    expect((refused as InstanceType<typeof Anthropic.RateLimitError>).headers.get('retry-after')).toBe('7');
  });

  it('on shutdown aborts a request whose tool is still running, and the tool process ends', async () => {
    const second = await openGateway({ projectDir: root, env, userDir: path.join(root, 'no-user-tier') });
    const listener = await listen((request, env) => second.app.fetch(request, env), { host: '127.0.0.1', port: 0 });
    const pidFile = path.join(root, '.ai', 'tools', 'project', 'slow.pid');
    rmSync(pidFile, { force: true });
    llm.replyOnce(openAiStream(['Waiting. [TOOL: wait_for_batch {}]']));
    const client = new OpenAI({ baseURL: `${listener.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'is the batch done?' }] });
    const reading = (async () => {
      for await (const chunk of stream) void chunk;
    })().catch((e: unknown) => e);
    await expect.poll(() => existsSync(pidFile), { timeout: 15_000 }).toBe(true);
    const pid = readSlowPid(pidFile);
    await listener.close(100);
    await second.close();
    await reading;
    // The process tree is signalled on abort; its exit is the kernel's to report.
    await expect.poll(() => processAlive(pid), { timeout: 10_000 }).toBe(false);
  }, 60_000);
});

describe('prefetch counters', () => {
  it('serves them on /metrics, and kiwi stats prints them from the running gateway', async () => {
    const metrics = (await (await fetch(`${server.url}/metrics`)).json()) as { prefetch: { snapshots: number; misses: number } };
    // The first test's turn was snapshotted while it streamed, and its intent was resolved with prefetch on.
    expect(metrics.prefetch.snapshots).toBeGreaterThan(0);
    expect(metrics.prefetch.misses).toBeGreaterThan(0);
    const out: string[] = [];
    const code = await runCli(['stats', '--url', server.url], { env, cwd: root, io: { out: (l) => out.push(l), err: (l) => out.push(l) } });
    expect(code).toBe(0);
    expect(out.join('\n')).toMatch(/hit rate/i);
  });

  it("serves them to Prometheus as kiwi_* beside the kernel's metrics, in which the chats so far are executions", async () => {
    const scrape = async (): Promise<string> => {
      const res = await fetch(`${server.url}/metrics`, { headers: { accept: 'text/plain;version=0.0.4' } });
      expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      return res.text();
    };
    const value = (text: string, sample: string): number => Number(text.split('\n').find((line) => line.startsWith(`${sample} `))?.slice(sample.length + 1));
    const text = await scrape();
    expect(value(text, 'kiwi_prefetch_snapshots_total')).toBeGreaterThan(0);
    expect(text).toMatch(/^rebuno_active_executions \d+$/m);
    // The chats' journal writes in batches: the first chat and its word_count call arrive with one.
    await expect.poll(async () => value(await scrape(), 'rebuno_executions_total{status="completed"}')).toBeGreaterThan(0);
    expect(value(await scrape(), 'rebuno_step_duration_seconds_count{tool_id="word_count"}')).toBeGreaterThan(0);
  });
});

describe('the gateway with the real anthropic client and the offline demo model', () => {
  it('shows a denied call in the answer, and the agent carries on', async () => {
    const client = new Anthropic({ baseURL: server.url, apiKey: 'not-used' });
    const message = await client.messages.create({ model: 'kiwi-demo', max_tokens: 1024, messages: [{ role: 'user', content: 'read /etc/passwd' }] });
    const text = message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    expect(text).toContain('(offline demo model)');
    expect(text).toMatch(/→ read_file \{"path":"\/etc\/passwd"\}/);
    expect(text).toMatch(/denied.*outside the project root/);
    expect(text).toContain('(demo model)');
    expect(message.stop_reason).toBe('end_turn');
  });
});

describe('the gateway as an MCP server over HTTP', () => {
  it("lists the demo project's tools to the MCP Inspector CLI through /mcp and runs one by its name", async () => {
    const [listed, called] = await Promise.all([
      inspect(['--method', 'tools/list'], [`${server.url}/mcp`]),
      inspect(['--method', 'tools/call', '--tool-name', 'word_count', '--tool-arg', 'path=README.md'], [`${server.url}/mcp`]),
    ]);
    expect(toolNames(listed)).toEqual(expect.arrayContaining(['search', 'execute', 'resolve', 'word_count', 'read_file']));
    expect(called).toMatchObject({ isError: false, structuredContent: { status: 'ok', tool: 'word_count', data: { words: 4 } } });
  });

  it('offers the meta-tools and resolves and runs an intent through the tool proxy', async () => {
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(expect.arrayContaining(['execute', 'help', 'load', 'resolve', 'search']));
      type Result = { content: { type: string; text: string }[]; isError?: boolean };
      const asked = (await client.callTool({ name: 'resolve', arguments: { intent: 'count the words in "README.md"' } })) as Result;
      expect(asked.content.map((c) => c.text).join('\n')).toMatch(/write it exactly as word_count[\s\S]*values read from the intent \(check them\): \{"path":"README\.md"\}\nif word_count is what you mean, resolve the exact call: word_count \{"path": "README\.md"\}/);
      expect((asked as Result & { structuredContent?: { found?: unknown } }).structuredContent?.found).toEqual({ path: 'README.md' });
      const result = (await client.callTool({ name: 'resolve', arguments: { intent: 'word_count {"path": "README.md"}' } })) as Result;
      expect(result.isError).toBeFalsy();
      expect(result.content.map((c) => c.text).join('\n')).toMatch(/word_count[\s\S]*"words": 4/);
    } finally {
      await client.close();
    }
  });
});

describe('kiwi serve', () => {
  it('prints its URL, serves, and stops cleanly on the abort signal', async () => {
    const { base, out, err, stop, exit } = await serveInProcess(root, env);
    const health = (await (await fetch(`${base}/healthz`)).json()) as { status: string };
    expect(health.status).toBe('ok');
    expect(out.join('\n')).toContain('kiwi-demo');
    // The banner names the console, which opens without a login on this keyless loopback gateway.
    expect(out.join('\n')).toContain(`console: ${base}/ui (no login on this machine); admin API: ${base}/admin/v1`);
    // It says which target_precisions the shipped model offers, and what the configured one does.
    const offered = offeredGates(await loadResolverModel()).map((g) => g.precision);
    const plainWords = out.find((line) => line.startsWith('plain words: '));
    expect(plainWords).toContain(`targets offered: ${offered.length ? offered.join(', ') : 'none'} (each held on every shipped catalog left out of fitting`);
    if (!offered.some((p) => p >= 0.95)) expect(plainWords).toMatch(/target_precision 0\.95 is not offered .* no call from plain words runs on the rules' confidence alone: a chat asks the request's own model in a side request/);
    expect((await fetch(`${base}/ui/login`, { redirect: 'manual' })).status).toBe(303);
    // The replay server has no model list (404): the start check says so for each of its upstreams, after the listen.
    await expect.poll(() => out.join('\n')).toMatch(/warning: upstream recorded \(http:\/\/127\.0\.0\.1:\d+\/v1\) is unavailable: HTTP 404; chats for gpt-\* fail until it answers/);
    expect(out.join('\n')).toMatch(/warning: upstream stalling \(http:\/\/127\.0\.0\.1:\d+\/v1\) is unavailable: HTTP 404/);
    expect(out.join('\n')).not.toMatch(/upstream demo .*unavailable/);
    stop.abort();
    expect(await exit).toBe(0);
    expect(err.join('\n')).toContain('shutting down');
  }, 60_000);

  it('says what to do when the port is taken', async () => {
    const err: string[] = [];
    const port = String(server.port);
    const code = await runCli(['serve', '--port', port, '--project', root], { env, cwd: root, io: { out: () => undefined, err: (l) => err.push(l) } });
    expect(code).toBe(1);
    expect(err.join('\n')).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} is already in use; stop the other server or pick another port`));
  }, 60_000);
});
