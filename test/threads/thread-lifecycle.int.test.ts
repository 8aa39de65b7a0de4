import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { runCli } from '../../src/app/run-cli.js';
import { isKiwiError } from '../../src/base/errors.js';
import { type ThreadLine } from '../../src/threads/thread-store.js';
import { fileThreadStore, THREADS_DIR } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { allowTools } from '../helpers/demo-project.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * A thread's life past one run, through `kiwi serve`'s wiring on a copy of the demo `.ai/` with a
 * recorded-stream upstream: resumed after it failed or was cut short (never while it runs, never
 * once it completed), run in the background and followed over MCP, cancelled, and started by a
 * policy hook.
 */

let served: DemoGateway;

const SHIP = `# ship

\`\`\`xml
<directive name="ship" version="1.0.0">
  <metadata>
    <description>Ship a release</description>
    <model tier="balanced"/>
    <permissions><execute resource="tool" id="ship_release"/><execute resource="shell" action="node"/></permissions>
  </metadata>
  <process><step name="ship"><description>Ship it</description></step></process>
</directive>
\`\`\`
`;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-thread-life-',
    config: 'model_tiers: { balanced: gpt-4o-mini }',
    prepare(root) {
      // A hook that starts review_changes whenever word_count ran, with an input from the event.
      const policy = path.join(root, '.ai', 'config', 'policy.yaml');
      const hook = '  - when: event.name == "after_call" and tool.id == "word_count"\n    directive: { name: review_changes, inputs: { focus: "${arguments.path}" } }\n';
      // One help signal a minute per client: the second is refused.
      const limited = readFileSync(policy, 'utf8').replace('per_tool: { "*": { max: 60, per_ms: 60000 } }', 'per_tool: { help: { max: 1, per_ms: 60000 }, "*": { max: 60, per_ms: 60000 } }');
      writeFileSync(policy, limited.replace(/^hooks:\n/m, `hooks:\n${hook}`));
      // A tool that needs a person, and a directive that may call it.
      const tools = path.join(root, '.ai', 'tools', 'project');
      writeFileSync(path.join(tools, 'ship.mjs'), "let s = ''; process.stdin.on('data', (c) => (s += c)); process.stdin.on('end', () => process.stdout.write(`shipped ${JSON.parse(s).version}`));\n");
      writeFileSync(path.join(tools, 'ship_release.yaml'), 'tool_id: ship_release\ntool_type: script\nexecutor: node_runtime\nversion: "1.0.0"\ndescription: "Ship a release"\nrequires_approval: true\nconfig:\n  script: ship.mjs\nparameters:\n  - { name: version, type: string, required: true }\n');
      allowTools(root, ['ship_release']);
      writeFileSync(path.join(root, '.ai', 'directives', 'ship.md'), SHIP);
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const types = (lines: ThreadLine[]): string[] => lines.map((l) => (l.type === 'call' || l.type === 'result' ? `${l.type}:${l.tool}` : l.type));

async function refusal(run: Promise<unknown>): Promise<string> {
  try {
    await run;
  } catch (error) {
    if (isKiwiError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  return 'ran';
}

describe('resuming a thread', () => {
  it('goes on after a failure in the same file: the agent reads what it did (fenced), turns number on, and a completed thread is not resumed', async () => {
    served.llm.replyOnce(openAiStream(['README first. [TOOL: read_file {"path": "README.md"}]']), { status: 500 });
    const failed = await served.gateway.threads.run({ directive: 'review_changes', inputs: { focus: 'docs' }, client: 'local' });
    expect(failed).toMatchObject({ status: 'failed', steps_taken: 1 });

    served.llm.replyOnce(openAiStream(['Nothing risky changed.']));
    const before = served.llm.requests.length;
    const resumed = await served.gateway.threads.resume({ id: failed.id, client: 'local', message: 'the upstream is back' });
    expect(resumed).toMatchObject({ id: failed.id, status: 'completed', steps_taken: 1, result: 'Nothing risky changed.' });

    const sent = served.llm.requests[before]?.body as { messages: { role: string; content: string }[] };
    const user = sent.messages.at(-1)?.content ?? '';
    expect(user).toMatch(/^Run the directive review_changes with the inputs \{"focus":"docs"\}\.\n\nThis thread ran before and stopped: it ended failed: /);
    expect(user).toMatch(/<<<DATA [0-9a-f]{24}\n\[turn 1\] README first\.\n→ read_file \{"path":"README\.md"\}\n✓ read_file: .*\nended .*: failed, 1 step\(s\), failure: model_error: .*answered 500.*\nDATA [0-9a-f]{24}>>>/);
    expect(user).toMatch(/do not repeat calls that already succeeded\.\nThe person resuming it says: the upstream is back$/);

    const lines = await fileThreadStore(served.root).read(failed.id);
    expect(types(lines)).toEqual(['thread', 'turn', 'call:read_file', 'result:read_file', 'end', 'resume', 'turn', 'end']);
    expect(lines[5]).toMatchObject({ type: 'resume', client: 'local', model: 'gpt-4o-mini', message: 'the upstream is back' });
    expect(lines[6]).toMatchObject({ type: 'turn', turn: 2 });
    expect(existsSync(path.join(served.root, THREADS_DIR, `${failed.id}.lock`))).toBe(false);

    expect(await refusal(served.gateway.threads.resume({ id: failed.id, client: 'local' }))).toMatch(/^CONFLICT: thread .* completed; run the directive review_changes again/);
  }, 60_000);

  it('goes on after a crash (no end, a torn last line, the lock of a process that is gone), and never while a live process holds it', async () => {
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff1000';
    const file = path.join(served.root, THREADS_DIR, `${id}.jsonl`);
    const lock = path.join(served.root, THREADS_DIR, `${id}.lock`);
    await (await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'gpt-4o-mini', client: 'local', depth: 1, started_at: new Date().toISOString() })).close();
    appendFileSync(file, '{"type":"turn","turn":1,"text":"Looking."}\n{"type":"call","call_id":"c1","to');

    // A live process holds the lock: refused, naming it.
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      writeFileSync(lock, JSON.stringify({ pid: sleeper.pid, host: hostname() }));
      expect(await refusal(served.gateway.threads.resume({ id, client: 'local' }))).toBe(`CONFLICT: thread ${id} is still running (process ${sleeper.pid}); wait for it to end, or stop that process`);
    } finally {
      sleeper.kill();
    }
    await new Promise((resolve) => sleeper.once('exit', resolve));

    // Its process is gone: the lock is stale, and the thread goes on from the CLI.
    served.llm.replyOnce(openAiStream(['Done looking.']));
    const out: string[] = [];
    const code = await runCli(['threads', 'resume', id, '--project', served.root], { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: (l) => out.push(l), err: () => undefined } });
    expect(code).toBe(0);
    expect(out.at(-2)).toBe(`thread ${id}: completed, 0 step(s); \`kiwi threads show ${id}\` has its transcript`);
    // This run's one turn; the gateway here prices no model.
    expect(out.at(-1)).toBe('used: gpt-4o-mini 10 in / 5 out unpriced; total $0.0000 + unpriced gpt-4o-mini');
    const sent = served.llm.requests.at(-1)?.body as { messages: { content: string }[] };
    expect(sent.messages.at(-1)?.content).toMatch(/stopped: it was cut short \(the process running it stopped\)/);
    // The torn line is skipped; what follows it is read.
    expect(types(await fileThreadStore(served.root).read(id))).toEqual(['thread', 'turn', 'resume', 'turn', 'end']);
  }, 60_000);

  it("is refused when the thread used up a limit that bounds it, or the id is not a thread's", async () => {
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff1001';
    const w = await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'gpt-4o-mini', client: 'local', depth: 1, started_at: new Date().toISOString() });
    await w.append({ type: 'end', status: 'completed', result: '', steps_taken: 0, limit: 'turns', ended_at: new Date().toISOString() });
    await w.close();
    expect(await refusal(served.gateway.threads.resume({ id, client: 'local' }))).toMatch(/^CONFLICT: thread .* used up its turns limit; raise it in the directive review_changes's <limits>/);
    expect(await refusal(served.gateway.threads.resume({ id: '../../etc/passwd', client: 'local' }))).toMatch(/^INVALID_INPUT: "..\/..\/etc\/passwd" is not a thread id/);
    expect(await refusal(served.gateway.threads.resume({ id: '0195aaaa-bbbb-4ccc-8ddd-eeeeffff9999', client: 'local' }))).toMatch(/^NOT_FOUND: no thread/);
  });
});

describe('threads over MCP', () => {
  let client: Client;
  beforeAll(async () => {
    client = new Client({ name: 'thread-life-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`)));
  });
  afterAll(async () => {
    await client?.close();
  });
  type Result = { structuredContent?: Record<string, unknown>; isError?: boolean; content?: { text?: string }[] };
  const execute = async (args: Record<string, unknown>, onprogress?: (p: { message?: string }) => void): Promise<Result> =>
    (await client.callTool({ name: 'execute', arguments: { item_type: 'directive', ...args } }, undefined, onprogress ? { onprogress } : {})) as Result;

  it('sends each line of a run as progress while it runs', async () => {
    served.llm.replyOnce(openAiStream(['[TOOL: read_file {"path": "README.md"}]']), openAiStream(['Reviewed.']));
    const progress: string[] = [];
    const result = await execute({ action: 'run', item_id: 'review_changes' }, (p) => progress.push(p.message ?? ''));
    expect(result.structuredContent).toMatchObject({ status: 'completed', result: 'Reviewed.' });
    expect(progress).toEqual(['→ read_file {"path":"README.md"}', expect.stringMatching(/^✓ read_file: /), '[turn 2] Reviewed.', expect.stringMatching(/^ended .*: completed, 1 step\(s\)$/)]);
  }, 60_000);

  it('runs in the background with async, followed with stream and status; cancel stops it', async () => {
    // The upstream sends a first chunk and then nothing: the thread runs until it is cancelled.
    served.llm.replyOnce({ recording: openAiStream(['Thinking hard…', ' more']), stallAfterChunks: 2 }); // the role chunk, then the first text
    const asked = served.llm.requests.length;
    const started = await execute({ action: 'run', item_id: 'review_changes', async: true });
    expect(started.structuredContent).toMatchObject({ status: 'running', thread: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const id = String(started.structuredContent?.['thread']);

    expect((await execute({ action: 'status', item_id: id })).structuredContent).toMatchObject({ thread: id, directive: 'review_changes', status: 'running', steps_taken: 0 });
    const first = await execute({ action: 'stream', item_id: id, parameters: { after: 0, wait_s: 5 } });
    expect(first.structuredContent).toMatchObject({ next: 1, ended: false, lines: [{ type: 'thread', id }] });
    // Nothing new comes while it stalls: the wait ends with no lines.
    expect((await execute({ action: 'stream', item_id: id, parameters: { after: 1, wait_s: 0.3 } })).structuredContent).toMatchObject({ next: 1, ended: false, lines: [] });

    await served.llm.request(asked); // its upstream stalls now
    expect((await execute({ action: 'cancel', item_id: id })).structuredContent).toMatchObject({ status: 'cancelling' });
    const rest = await execute({ action: 'stream', item_id: id, parameters: { after: 1, wait_s: 10 } });
    // What the agent wrote before the cancel (when it arrived) is kept, then the end.
    expect(rest.structuredContent).toMatchObject({ ended: true });
    expect((rest.structuredContent?.['lines'] as ThreadLine[]).at(-1)).toMatchObject({ type: 'end', status: 'cancelled', error: `thread ${id} was cancelled` });
    expect((await execute({ action: 'status', item_id: id })).structuredContent).toMatchObject({ status: 'cancelled' });
    expect((await execute({ action: 'cancel', item_id: id })).content?.[0]?.text).toMatch(/thread .* is not running/);

    // Resumed in the background too; it completes.
    served.llm.replyOnce(openAiStream(['Done after all.']));
    expect((await execute({ action: 'resume', item_id: id, async: true })).structuredContent).toMatchObject({ thread: id, status: 'running' });
    await expect.poll(async () => (await execute({ action: 'status', item_id: id })).structuredContent?.['status'], { timeout: 10_000 }).toBe('completed');
  }, 60_000);

  it('streams a long thread in pieces of at most 1 MB', async () => {
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff3000';
    const w = await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'gpt-4o-mini', client: 'local', depth: 1, started_at: new Date().toISOString() });
    for (let turn = 1; turn <= 40; turn++) await w.append({ type: 'turn', turn, text: 'x'.repeat(60_000) });
    await w.close();
    const first = (await execute({ action: 'stream', item_id: id, parameters: { wait_s: 0 } })).structuredContent as { next: number; ended: boolean };
    expect(first.next).toBeGreaterThan(1);
    expect(first.next).toBeLessThan(41);
    expect(first.ended).toBe(false);
    let next = first.next;
    for (let i = 0; i < 5 && next < 41; i++) next = ((await execute({ action: 'stream', item_id: id, parameters: { after: next, wait_s: 0 } })).structuredContent as { next: number }).next;
    expect(next).toBe(41);
  }, 60_000);

  it("answers another client's thread as no thread, and refuses bad parameters with the form to use", async () => {
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff2000';
    await (await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'gpt-4o-mini', client: 'ops', depth: 1, started_at: new Date().toISOString() })).close();
    const other = await execute({ action: 'status', item_id: id });
    expect(other.isError).toBe(true);
    expect(other.content?.[0]?.text).toMatch(`no thread ${id} of client local`);
    const mine = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff1001';
    expect((await execute({ action: 'stream', item_id: mine, parameters: { after: -1 } })).content?.[0]?.text).toMatch(/after: .*; stream takes parameters \{"after": LINE, "wait_s": SECONDS\}/);
    expect((await execute({ action: 'stream', item_id: mine, parameters: { wait: 3 } })).content?.[0]?.text).toMatch(/Unrecognized key.*"wait"/);
    expect((await execute({ action: 'resume', item_id: mine, parameters: { message: 'x'.repeat(5000) } })).content?.[0]?.text).toMatch(/message: .*4000/);
    expect((await execute({ action: 'status', item_id: 'not-a-thread' })).content?.[0]?.text).toMatch(/"not-a-thread" is not a thread id/);
  });
});

describe("a thread's call that needs a person", () => {
  const cli = async (argv: string[]): Promise<{ code: number; out: string }> => {
    const out: string[] = [];
    const code = await runCli(argv, { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: (l) => out.push(l), err: (l) => out.push(l) } });
    return { code, out: out.join('\n') };
  };
  const waitingStep = async (id: string): Promise<string> => {
    await expect.poll(async () => (await fileThreadStore(served.root).read(id)).some((l) => l.type === 'approval'), { timeout: 10_000 }).toBe(true);
    const line = (await fileThreadStore(served.root).read(id)).find((l): l is Extract<ThreadLine, { type: 'approval' }> => l.type === 'approval');
    return line?.step_id as string;
  };

  it('waits on its step in the kernel, as a chat does: kiwi approvals lists and grants it, and the thread goes on', async () => {
    served.llm.replyOnce(openAiStream(['Shipping. [TOOL: ship_release {"version": "1.2.3"}]']), openAiStream(['Shipped.']));
    const id = await served.gateway.threads.background({ start: { directive: 'ship', client: 'local' } });
    const step = await waitingStep(id);
    const listed = await cli(['approvals', 'list', '--url', served.server.url]);
    expect(listed.out).toMatch(new RegExp(`${step}  ship_release \\{"version":"1.2.3"\\}  \\(agent gateway, execution `));
    expect((await cli(['approvals', 'grant', step, '--url', served.server.url, '--as', 'alice'])).code).toBe(0);
    await expect.poll(async () => (await fileThreadStore(served.root).read(id)).at(-1)?.type, { timeout: 10_000 }).toBe('end');
    const lines = await fileThreadStore(served.root).read(id);
    expect(lines.find((l) => l.type === 'result')).toMatchObject({ tool: 'ship_release', status: 'ok', text: 'shipped 1.2.3' });
    expect(lines.at(-1)).toMatchObject({ status: 'completed', result: 'Shipped.' });
  }, 60_000);

  it('is cancelled with the thread when its execution is cancelled through the kernel', async () => {
    served.llm.replyOnce(openAiStream(['Shipping. [TOOL: ship_release {"version": "2.0.0"}]']));
    const id = await served.gateway.threads.background({ start: { directive: 'ship', client: 'local' } });
    const step = await waitingStep(id);
    const waiting = JSON.parse((await cli(['approvals', 'list', '--url', served.server.url, '--json'])).out) as { stepId: string; executionId: string }[];
    const execution = waiting.find((w) => w.stepId === step)?.executionId as string;
    expect((await fetch(`${served.server.url}/v0/executions/${execution}/cancel`, { method: 'POST' })).status).toBe(200);
    await expect.poll(async () => (await fileThreadStore(served.root).read(id)).at(-1), { timeout: 10_000 }).toMatchObject({ type: 'end', status: 'cancelled', error: `thread ${id} was cancelled through its execution ${execution}` });
  }, 60_000);

  it('`kiwi threads cancel` stops it through the gateway it runs on', async () => {
    served.llm.replyOnce(openAiStream(['Shipping. [TOOL: ship_release {"version": "2.5.0"}]']));
    const id = await served.gateway.threads.background({ start: { directive: 'ship', client: 'local' } });
    await waitingStep(id);
    const cancelled = await cli(['threads', 'cancel', id, '--url', served.server.url]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.out).toMatch(new RegExp(`^cancelled: thread ${id} \\(execution [0-9a-f-]{36}\\)`));
    await expect.poll(async () => (await fileThreadStore(served.root).read(id)).at(-1), { timeout: 10_000 }).toMatchObject({ type: 'end', status: 'cancelled' });
    // Ended now: nothing runs under its id any more.
    const again = await cli(['threads', 'cancel', id, '--url', served.server.url]);
    expect(again.code).not.toBe(0);
    expect(again.out).toMatch(`the gateway runs no thread ${id} now`);
    expect((await cli(['threads', 'cancel', '../x', '--url', served.server.url])).out).toMatch(/"..\/x" is not a thread id/);
  }, 60_000);

  it('is refused at once where no one can answer (kiwi directives run, in-process)', async () => {
    served.llm.replyOnce(openAiStream(['Shipping. [TOOL: ship_release {"version": "3.0.0"}]']), openAiStream(['Could not ship.']));
    const run = await cli(['directives', 'run', 'ship', '--project', served.root]);
    expect(run.out).toMatch(/✗ denied: ship_release: .*this caller cannot ask a person \(only a chat, an MCP call or a thread on a running gateway can\)/);
  }, 60_000);
});

describe('a help signal refused by the rate limit', () => {
  it('does not end the thread as escalated: the agent is told it was not recorded and goes on', async () => {
    served.llm.replyOnce(
      openAiStream(['[TOOL: help stuck: the config is missing]']),
      openAiStream(['[TOOL: help escalate: a person must decide]']),
      openAiStream(['Finished without a person.']),
    );
    const before = served.llm.requests.length;
    const outcome = await served.gateway.threads.run({ directive: 'review_changes', client: 'limited-helper' });
    expect(outcome).toMatchObject({ status: 'completed', result: 'Finished without a person.' });
    const third = served.llm.requests[before + 2]?.body as { messages: { content: string }[] };
    expect(third.messages.at(-1)?.content).toMatch(/Your "escalate" signal was not recorded: .*rate limit for tool `help`/);
  }, 60_000);
});

describe('the threads a gateway runs', () => {
  it('counts background starts from the request on: of 17 asked for at once, 16 start and one is refused', async () => {
    const stall = { recording: openAiStream(['Waiting…', ' more']), stallAfterChunks: 2 };
    served.llm.replyOnce(...Array.from({ length: 16 }, () => stall));
    const asked = served.llm.requests.length;
    const starts = await Promise.allSettled(Array.from({ length: 17 }, () => served.gateway.threads.background({ start: { directive: 'review_changes', client: 'local' } })));
    const refused = starts.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect(String(refused[0]?.reason)).toMatch(/16 threads already run in the background/);
    await served.llm.request(asked + 15); // every one that started is waiting on its upstream
    await served.gateway.threads.close();
    for (const s of starts) if (s.status === 'fulfilled') expect((await fileThreadStore(served.root).read(s.value)).at(-1)).toMatchObject({ type: 'end', status: 'cancelled' });
  }, 60_000);

  it('cancels a thread whose caller waits for it, over MCP too', async () => {
    served.llm.replyOnce({ recording: openAiStream(['Waiting…', ' more']), stallAfterChunks: 2 });
    const asked = served.llm.requests.length;
    let id = '';
    const running = served.gateway.threads.run({ directive: 'review_changes', client: 'local', onStart: (started) => (id = started) });
    await served.llm.request(asked);
    const client = new Client({ name: 'thread-life-cancel', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`)));
    try {
      const r = (await client.callTool({ name: 'execute', arguments: { item_type: 'directive', action: 'cancel', item_id: id } })) as { structuredContent?: Record<string, unknown> };
      expect(r.structuredContent).toMatchObject({ status: 'cancelling' });
    } finally {
      await client.close();
    }
    expect(await running).toMatchObject({ id, status: 'cancelled', error: `thread ${id} was cancelled` });
  }, 60_000);
});

describe('background threads at shutdown', () => {
  it('are cancelled, and their ends written, before the gateway closes', async () => {
    served.llm.replyOnce({ recording: openAiStream(['Still thinking…', ' more']), stallAfterChunks: 2 });
    const asked = served.llm.requests.length;
    const id = await served.gateway.threads.background({ start: { directive: 'review_changes', client: 'local' } });
    await served.llm.request(asked); // it runs: its upstream stalls
    await served.gateway.threads.close();
    expect((await fileThreadStore(served.root).read(id)).at(-1)).toMatchObject({ type: 'end', status: 'cancelled', error: 'the gateway is shutting down' });
  }, 60_000);
});

describe("a hook's directive", () => {
  it('starts as a background thread for the call that fired it, noted in the call\'s audit record', async () => {
    served.llm.replyOnce(openAiStream(['Reviewed what the hook asked.']));
    const outcome = await served.gateway.project.proxy.call({ target: { tool: 'word_count', args: { path: 'README.md' } }, caller: { session: 'hook-session', client: 'local', source: 'cli' } });
    expect(outcome.status).toBe('ok');
    expect(outcome.directives).toBeUndefined(); // not handed to an agent: it runs
    await served.gateway.project.audit.flush();
    const record = (await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 50 })).find((r) => r.session === 'hook-session');
    const note = record?.notes?.find((n) => n.startsWith('a hook started thread'));
    const id = /a hook started thread ([0-9a-f-]{36}) running directive review_changes with \{"focus":"\/.*\/README.md"\}/.exec(note ?? '')?.[1];
    expect(id, JSON.stringify(record?.notes)).toBeDefined();
    await expect.poll(async () => JSON.stringify(await fileThreadStore(served.root).read(id as string)), { timeout: 10_000 }).toMatch(/"type":"end"/);
    const lines = await fileThreadStore(served.root).read(id as string);
    // The hook's input is filled from the checked arguments: the path made absolute.
    expect(lines[0]).toMatchObject({ directive: 'review_changes', inputs: { focus: path.join(served.root, 'README.md') }, client: 'local', depth: 1 });
    expect(lines.at(-1)).toMatchObject({ status: 'completed', result: 'Reviewed what the hook asked.' });
  }, 60_000);
});
