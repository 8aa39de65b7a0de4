import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { intentInstructions } from '../../src/intent/intent-instructions.js';
import type { AgentLoopDeps } from '../../src/loop/agent-loop.js';
import { createOpenAiProvider } from '../../src/llm/openai-provider.js';
import type { ChatProvider } from '../../src/llm/types.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import { createResolver, resolvableTools } from '../../src/resolver/resolver.js';
import type { Resolver } from '../../src/resolver/types.js';
import { BEST_FIT_DENIED } from '../../src/resolver/ask-back.js';
import { childContext, emptyRules } from '../../src/policy/permission-context.js';
import { candidateRights } from '../../src/proxy/tool-rights.js';
import { openToolIndex, type ToolIndex } from '../../src/store/tool-index.js';
import { createHashEmbedder } from '../helpers/hash-embedder.js';
import { ask, collectLoop as collect, expectLoopError, finishOf, ofType, textOf } from '../helpers/loop-run.js';
import { openAiStream as sse } from '../helpers/openai-sse.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { createTempProject, FIXTURES, type TempProject } from '../helpers/temp-project.js';
import { processAlive } from '../../src/base/process-alive.js';
import { readSlowPid } from '../helpers/slow-tool.js';

// The agent loop with the real things: the resolver over a LanceDB index, the project's policy,
// subprocess tools and their audit, an OpenAI upstream over HTTP. The loop's own logic (turns,
// feedback, limits, stops) is tested on in-process doubles in agent-loop*.test.ts.

const tool = (id: string, description: string, script: string, params: string[] = [], extra = ''): string =>
  [
    `tool_id: ${id}`,
    'tool_type: script',
    'executor: subprocess',
    'version: "1.0.0"',
    `description: "${description}"`,
    `config: { command: node, script: ${script}, args: ["{script}"${params.map((p) => `, "{${p}}"`).join('')}]${extra} }`,
    ...(params.length > 0 ? ['parameters:', ...params.map((p) => `  - { name: ${p}, type: string, required: true }`)] : []),
    '',
  ].join('\n');

const TOOLS: Record<string, string> = {
  echo_text: tool('echo_text', 'Echo a text message back unchanged', 'echo.mjs', ['text']),
  reverse_letters: tool('reverse_letters', 'Reverse the letters of a word', 'reverse.mjs', ['word']),
  nightly_job: tool('nightly_job', 'Run the slow nightly database backup job', 'slow.mjs', [], ', timeout_ms: 120000'),
  wipe_disk: tool('wipe_disk', 'Wipe the whole disk and erase every file', 'echo.mjs'),
  send_chat: tool('send_chat', 'Send a chat message to a channel', 'echo.mjs', ['channel', 'message']),
};

const POLICY = `version: 1
tools: [echo_text, reverse_letters, nightly_job, send_chat]
filesystem: { read: [], write: [] }
commands:
  - { executable: node }
# slow.mjs writes its host pid beside itself for the cancel tests; a sandbox would hide both.
sandbox: { mode: off }
`;

let temp: TempProject;
let project: Project;
let indexDir: string;
let index: ToolIndex;
let resolver: Resolver;

beforeAll(async () => {
  temp = createTempProject();
  for (const [id, text] of Object.entries(TOOLS)) temp.write(`.ai/tools/test/${id}.yaml`, text);
  for (const file of ['echo.mjs', 'reverse.mjs', 'slow.mjs']) {
    temp.write(`.ai/tools/test/${file}`, readFileSync(path.join(FIXTURES, 'gateway-loop', file), 'utf8'));
  }
  temp.write('.ai/config/policy.yaml', POLICY);
  project = await openProject({ projectDir: temp.root, env: { PATH: process.env['PATH'], HOME: process.env['HOME'] }, session: 'loop-test' });
  expect(project.registry.errors).toEqual([]);
  indexDir = mkdtempSync(path.join(tmpdir(), 'kiwi-loop-index-'));
  const embedder = createHashEmbedder({ dimensions: 128 });
  const tools = resolvableTools(project.registry.tools.values());
  index = await openToolIndex({ dir: indexDir, embedder });
  await index.sync([...tools.values()]);
  resolver = createResolver({ tools, search: index, embedder, settings: { threshold: 0.3 } });
});

afterAll(async () => {
  await project?.close();
  await index?.close();
  if (indexDir) rmSync(indexDir, { recursive: true, force: true });
  temp?.remove();
});

let llm: ReplayLlmServer;
let provider: ChatProvider;
let sessions = 0;

beforeEach(async () => {
  llm = await startReplayLlmServer();
  provider = createOpenAiProvider({ baseUrl: `${llm.url}/v1` });
});

afterEach(async () => {
  await provider.close();
  await llm.close();
});

/** Each test's loop is its own conversation and client, so rate limits and the loop detector start fresh. */
function loopDeps(overrides: Partial<AgentLoopDeps> = {}): AgentLoopDeps & { session: string } {
  let ids = 0;
  const session = `loop-${process.pid}-${++sessions}`;
  return {
    provider,
    resolve: (intent, options) => resolver.resolve(intent, options),
    call: (call) => project.proxy.call({ ...call, caller: { ...call.caller, session, client: session } }),
    session,
    newId: () => String(++ids),
    ...overrides,
  };
}

type Message = { role: string; content: string };
const sentMessages = async (i: number): Promise<Message[]> => ((await llm.request(i)).body as { messages: Message[] }).messages;

async function auditedTools(session: string): Promise<string[]> {
  await project.audit.flush();
  // The project writes one audit file (its own session); each record names the caller's session.
  const records = await readAuditTail({ dir: project.auditDir, limit: 10_000 });
  return records.filter((r) => r.session === session).map((r) => r.tool);
}

const PID_FILE = (): string => path.join(temp.root, '.ai', 'tools', 'test', 'slow.pid');

describe('agent loop: execute mode', () => {
  it('runs an exact call as written, JSON brackets and all, and asks for the exact form when one is malformed', async () => {
    llm.replyOnce(
      { recording: sse(['[TOOL: echo_text {"text": "a [bracketed] note"}] and [TOOL: echo_text {"txt": "x"}]']) },
      { recording: sse(['Done.']) },
    );
    const deps = loopDeps();
    const { events, error } = await collect(deps, ask('Echo it.'));
    expect(error).toBeUndefined();
    expect(ofType(events, 'call').map((e) => [e.call, e.confidence])).toEqual([[{ tool: 'echo_text', arguments: { text: 'a [bracketed] note' } }, 1]]);
    expect(ofType(events, 'result')[0]?.text).toBe('echo: a [bracketed] note');
    expect(ofType(events, 'unresolved')[0]).toMatchObject({ intent: 'echo_text {"txt": "x"}', reason: expect.stringMatching(/lacks the required `text`/), candidates: ['echo_text'], missing: ['text'] });
    const feedback = (await sentMessages(1))[3]?.content ?? '';
    expect(feedback).toContain('Call it exactly, with every value written out: [TOOL: echo_text {"text": "<text>"}]');
  });

  it('runs an intent split across chunks, feeds the result back and finishes on a turn without intents', async () => {
    llm.replyOnce(
      { recording: sse(['Let me check. [TO', 'OL: echo the text "hel', 'lo world"] then I', ' will answer.'], { usage: [20, 9] }) },
      { recording: sse(['The tool said ', 'hello world.'], { usage: [50, 6] }) },
    );
    const deps = loopDeps();
    const { events, error } = await collect(deps, ask('Please echo "hello world".'));
    expect(error).toBeUndefined();
    expect(events[0]).toEqual({ type: 'start', id: 'kiwi-1', model: 'client-model' });
    expect(ofType(events, 'intent')).toEqual([{ type: 'intent', index: 0, text: 'echo the text "hello world"', raw: '[TOOL: echo the text "hello world"]' }]);
    expect(ofType(events, 'call')).toEqual([
      {
        type: 'call',
        index: 0,
        callId: 'call_kiwi_2',
        intent: 'echo the text "hello world"',
        call: { tool: 'echo_text', arguments: { text: 'hello world' } },
        confidence: expect.any(Number),
        // The closest few, best first: what the execution records of how it was resolved.
        candidates: [{ tool: 'echo_text', score: expect.any(Number) }, expect.anything(), expect.anything()],
      },
    ]);
    expect(ofType(events, 'result')).toEqual([{ type: 'result', index: 0, callId: 'call_kiwi_2', tool: 'echo_text', status: 'ok', isError: false, text: 'echo: hello world', durationMs: expect.any(Number), proxyCallId: expect.any(String) }]);
    expect(textOf(events)).toBe('Let me check.  then I will answer.The tool said hello world.');
    expect(finishOf(events)).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: 70, outputTokens: 15 }, turns: 2, toolCalls: 1 });
    expect(events.map((e) => e.type).filter((t) => t !== 'text')).toEqual(['start', 'intent', 'call', 'result', 'turn', 'finish']);
    expect(ofType(events, 'turn')).toEqual([{ type: 'turn', turn: 2 }]);

    const first = await sentMessages(0);
    expect(first).toEqual([
      { role: 'system', content: intentInstructions() },
      { role: 'user', content: 'Please echo "hello world".' },
    ]);
    const second = await sentMessages(1);
    expect(second).toHaveLength(4);
    expect(second.slice(0, 3)).toEqual([...first, { role: 'assistant', content: 'Let me check. [TOOL: echo the text "hello world"] then I will answer.' }]);
    expect(second[3]?.role).toBe('user');
    expect(second[3]?.content).toContain('Intent: echo the text "hello world"');
    expect(second[3]?.content).toContain('Call: echo_text {"text":"hello world"}');
    expect(second[3]?.content).toMatch(/Result:\n<<<DATA ([0-9a-f]{24})\necho: hello world\nDATA \1>>>/);
    expect(llm.requests).toHaveLength(2);
    expect(await auditedTools(deps.session)).toEqual(['echo_text']);
  });

  it('feeds an unresolved intent back with the reason, the candidates, the missing arguments and what to write instead', async () => {
    llm.replyOnce({ recording: sse(['[TOOL: send a chat message to a channel]']) }, { recording: sse(['I need the channel name.']) });
    const deps = loopDeps();
    const { events } = await collect(deps, ask('Tell the team.'));
    const [unresolved] = ofType(events, 'unresolved');
    expect(unresolved).toMatchObject({ index: 0, intent: 'send a chat message to a channel', missing: ['channel'] });
    expect(unresolved?.candidates[0]).toBe('send_chat');
    expect(unresolved?.candidates.length).toBeLessThanOrEqual(3);
    expect(ofType(events, 'call')).toEqual([]);
    expect(finishOf(events)).toMatchObject({ turns: 2, toolCalls: 0 });
    const feedback = (await sentMessages(1))[3]?.content ?? '';
    expect(feedback).toContain(`Not run: ${unresolved?.reason}`);
    expect(feedback).toMatch(/Closest tools: send_chat/);
    expect(feedback).toContain('Missing arguments: channel.');
    expect(feedback).toMatch(/Call it exactly, with every value written out: \[TOOL: send_chat \{(.*, )?"channel": "<channel>"\}\]/);
    expect(await auditedTools(deps.session)).toEqual([]);
  });

  it('shows the closest tools as one-line schemas and an example call with their own parameters, the values the text holds and placeholders', async () => {
    llm.replyOnce({ recording: sse(['[TOOL: send a chat message "deploy done" to a channel]']) }, { recording: sse(['I need the channel.']) });
    const deps = loopDeps({ toolOf: (id) => project.registry.tools.get(id) });
    await collect(deps, ask('Tell the team.'));
    const feedback = (await sentMessages(1))[3]?.content ?? '';
    expect(feedback).toMatch(/Closest tools, as they are called:\n- send_chat \{"channel": string, "message": string\} — Send a chat message to a channel/);
    expect(feedback).not.toContain('Closest tools: ');
    expect(feedback).toContain('Call it exactly, with every value written out: [TOOL: send_chat {"channel": "<channel>", "message": "deploy done"}]');
  });

  it('offers only tools the caller may run: a client policy that denies the best fit leaves it out of the ask-back, example call included (issue 40)', async () => {
    llm.replyOnce({ recording: sse(['[TOOL: send a chat message to a channel]']) }, { recording: sse(['I cannot.']) });
    const caller = { client: 'narrow', context: childContext(project.policy, { ...emptyRules(), tools: ['echo_text', 'reverse_letters', 'nightly_job'] }, 'client narrow') };
    const mayRun = candidateRights(project.policy, caller, project.registry.tools);
    const whole = await resolver.resolve('send a chat message to a channel', { context: '' });
    expect(whole.candidates[0]?.tool).toBe('send_chat');
    const deps = loopDeps({ toolOf: (id) => project.registry.tools.get(id), mayRun });
    const { events } = await collect(deps, ask('Tell the team.'));
    const [unresolved] = ofType(events, 'unresolved');
    expect(unresolved).toMatchObject({ reason: BEST_FIT_DENIED, missing: [] });
    expect(unresolved?.candidates.length).toBeGreaterThan(0);
    expect(unresolved?.candidates).not.toContain('send_chat');
    const feedback = (await sentMessages(1))[3]?.content ?? '';
    expect(feedback).not.toContain('send_chat');
    expect(feedback).toContain(`If one of them is what you mean, call it exactly with its arguments as JSON (e.g. [TOOL: ${unresolved?.candidates[0]} {`);
    expect(feedback).not.toContain('"name": "value"');
  });

  it('feeds a denied call back with the reason and "do not retry"', async () => {
    llm.replyOnce({ recording: sse(['[TOOL: wipe the whole disk]']) }, { recording: sse(['I may not do that.']) });
    const deps = loopDeps();
    const { events } = await collect(deps, ask('Clean up everything.'));
    const [result] = ofType(events, 'result');
    expect(result).toMatchObject({ tool: 'wipe_disk', status: 'denied', isError: true });
    expect(result?.text).toMatch(/wipe_disk/);
    const feedback = (await sentMessages(1))[3]?.content ?? '';
    expect(feedback).toContain(`Denied: ${result?.text}`);
    expect(feedback).toContain('Do not retry the same call');
    expect(await auditedTools(deps.session)).toEqual(['wipe_disk']);
  });

});

describe('agent loop: limits', () => {
  it('stops at maxDurationMs: cancels the upstream and the running tool, reports both, and finishes with limit "duration"', async () => {
    rmSync(PID_FILE(), { force: true });
    llm.replyOnce({ recording: sse(['Backing up. [TOOL: run the nightly database backup job] waiting', ' for it']), stallAfterChunks: 2 });
    const { events, error } = await collect(loopDeps({ limits: { maxDurationMs: 1500 } }), ask('Back up.'));
    expect(error).toBeUndefined();
    const [result] = ofType(events, 'result');
    expect(result).toMatchObject({ tool: 'nightly_job', status: 'error', isError: true });
    expect(result?.text).toMatch(/^TOOL_CANCELLED/);
    expect(textOf(events)).toMatch(/time limit of 1500 ms.*limits\.max_duration_ms/s);
    expect(finishOf(events)).toMatchObject({ reason: 'other', turns: 1, toolCalls: 1, limit: 'duration' });
    expect(await llm.requests[0]?.closed).toBe('cut');
    if (existsSync(PID_FILE())) expect(processAlive(readSlowPid(PID_FILE()))).toBe(false);
  });

});

describe('agent loop: cancellation and failures', () => {
  it('stops promptly when the client aborts mid-stream: the upstream connection is cut, the running tool ended, TOOL_CANCELLED thrown', async () => {
    rmSync(PID_FILE(), { force: true });
    llm.replyOnce({ recording: sse(['Backing up. [TOOL: run the nightly database backup job] waiting', ' for it']), stallAfterChunks: 2 });
    const controller = new AbortController();
    let pid = 0;
    const { events, error } = await collect(loopDeps(), ask('Back up.'), { mode: 'execute', signal: controller.signal }, async (event) => {
      if (event.type !== 'call') return;
      await vi.waitFor(() => expect(existsSync(PID_FILE())).toBe(true), { timeout: 15_000, interval: 20 });
      pid = readSlowPid(PID_FILE());
      expect(processAlive(pid)).toBe(true);
      controller.abort();
    });
    expectLoopError(error, 'TOOL_CANCELLED', /client cancelled/);
    expect(events.some((e) => e.type === 'finish')).toBe(false);
    expect(await llm.requests[0]?.closed).toBe('cut');
    // Ended, then reaped by whoever is its parent now: the kernel reports the exit a moment later.
    expect(pid).toBeGreaterThan(0);
    await vi.waitFor(() => expect(processAlive(pid)).toBe(false), { timeout: 5_000, interval: 20 });
  });

  it('cancels everything in flight when the consumer stops iterating', async () => {
    rmSync(PID_FILE(), { force: true });
    llm.replyOnce({ recording: sse(['Backing up. [TOOL: run the nightly database backup job] waiting', ' for it']), stallAfterChunks: 2 });
    let pid = 0;
    const { error } = await collect(loopDeps(), ask('Back up.'), { mode: 'execute' }, async (event) => {
      if (event.type !== 'call') return false;
      await vi.waitFor(() => expect(existsSync(PID_FILE())).toBe(true), { timeout: 15_000, interval: 20 });
      pid = readSlowPid(PID_FILE());
      return true;
    });
    expect(error).toBeUndefined();
    expect(await llm.requests[0]?.closed).toBe('cut');
    // Ended, then reaped by whoever is its parent now: the kernel reports the exit a moment later.
    expect(pid).toBeGreaterThan(0);
    await vi.waitFor(() => expect(processAlive(pid)).toBe(false), { timeout: 5_000, interval: 20 });
  });

});
