import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { runCli } from '../../src/app/run-cli.js';
import { isKiwiError } from '../../src/base/errors.js';
import { directiveModel } from '../../src/threads/directive-choice.js';
import { checkInputs } from '../../src/registry/directive-input-values.js';
import { type ThreadLine } from '../../src/threads/thread-store.js';
import { fileThreadStore, THREADS_DIR } from '../../src/threads/file-thread-store.js';
import type { Directive } from '../../src/registry/types.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { allowTools } from '../helpers/demo-project.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * The demo's review_changes directive run as a thread through the gateway (`kiwi serve`'s wiring
 * on a copy of the demo `.ai/`): on a recorded-stream upstream its tier maps to, and on the
 * offline demo model. Only its declared tools run; a call outside them is denied and shown; the
 * transcript is on disk and the calls are audited under the thread.
 */

let served: DemoGateway;

/** A directive file on the balanced tier, in the demo's form. */
const directiveFile = (name: string, description: string, limits: string, permissions: string[], step: string): string => `# ${name}

\`\`\`xml
<directive name="${name}" version="1.0.0">
  <metadata>
    <description>${description}</description>
    <model tier="balanced"/>
    <limits ${limits}/>
    <permissions>
${permissions.map((p) => `      ${p}`).join('\n')}
    </permissions>
  </metadata>
  <process><step name="${name}"><description>${step}</description></step></process>
</directive>
\`\`\`
`;

const DELEGATE = directiveFile('delegate', 'Hand the reading to a sub-thread', 'spawns="1"', ['<execute resource="tool" id="read_on_a_budget"/>', '<execute resource="spawn" action="thread"/>'], 'Spawn a reader');
const TIGHT = directiveFile('tight', 'Read files on a small budget', 'spend="0.02"', ['<read resource="filesystem" path="**"/>', '<execute resource="tool" id="read_file"/>'], 'Read the README');

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-threads-',
    // Each recorded turn reports 15 tokens: $0.015 at these prices, so the tight directive's $0.02 lasts two turns.
    config: ['model_tiers: { balanced: gpt-4o-mini }', 'prices:', '  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }'].join('\n'),
    prepare(root) {
      writeFileSync(path.join(root, '.ai', 'directives', 'tight.md'), TIGHT);
      writeFileSync(path.join(root, '.ai', 'directives', 'delegate.md'), DELEGATE);
      // Kiwi's thread runtime and a thread tool on it, as Kiwi's own manifests write them.
      writeFileSync(path.join(root, '.ai', 'tools', 'project', 'llm_runtime.yaml'), 'tool_id: llm_runtime\ntool_type: runtime\nexecutor: http_client\nversion: "1.0.0"\ndescription: "Runtime for spawning LLM threads"\n');
      writeFileSync(path.join(root, '.ai', 'tools', 'project', 'read_on_a_budget.yaml'), 'tool_id: read_on_a_budget\ntool_type: thread\nexecutor: llm_runtime\nversion: "1.0.0"\ndescription: "Spawn a thread that reads files on a small budget"\nconfig:\n  directive: tight\n  model_tier: balanced\n');
      allowTools(root, ['read_on_a_budget']);
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const types = (lines: ThreadLine[]): string[] => lines.map((l) => (l.type === 'call' || l.type === 'result' ? `${l.type}:${l.tool}` : l.type));

describe('a directive run as a thread', () => {
  it('runs on the model its tier maps to, with only its declared tools: a call outside them is denied, and the agent reads why', async () => {
    served.llm.replyOnce(
      openAiStream(['Reading the README first. [TOOL: read_file {"path": "README.md"}]']),
      openAiStream(['And its word count. [TOOL: word_count {"path": "README.md"}]']),
      openAiStream(['Review: nothing risky.']),
    );
    const before = served.llm.requests.length;
    const outcome = await served.gateway.threads.run({ directive: 'review_changes', inputs: { focus: 'docs' }, client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', steps_taken: 2, result: 'Review: nothing risky.', audit: { session: outcome.id } });

    const requests = served.llm.requests.slice(before);
    expect(requests).toHaveLength(3);
    const first = requests[0]?.body as { model: string; messages: { role: string; content: string }[] };
    expect(first.model).toBe('gpt-4o-mini');
    expect(first.messages[0]?.content).toMatch(/You are running the directive "review_changes"[\s\S]*only these tools are allowed here[^\n]*\n(read_file, git_diff, git_status|git_diff, git_status, read_file)/);
    expect(first.messages.at(-1)?.content).toBe('Run the directive review_changes with the inputs {"focus":"docs"}.');
    expect(JSON.stringify(requests[2]?.body)).toMatch(/denied by directive review_changes: tool `word_count` is not in `tools`/);

    const lines = await fileThreadStore(served.root).read(outcome.id);
    expect(types(lines)).toEqual(['thread', 'turn', 'call:read_file', 'result:read_file', 'turn', 'call:word_count', 'result:word_count', 'turn', 'end']);
    expect(lines[0]).toMatchObject({ type: 'thread', directive: 'review_changes', inputs: { focus: 'docs' }, model: 'gpt-4o-mini', client: 'local', depth: 1 });
    expect(lines[3]).toMatchObject({ status: 'ok', text: expect.stringContaining('one two three') });
    expect(lines[6]).toMatchObject({ status: 'denied' });
    // The audit is written behind the calls.
    const audited = async () => (await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 100 })).filter((r) => r.session === outcome.id).map((r) => [r.tool, r.decision, r.source]);
    await expect.poll(audited).toEqual([
      ['read_file', 'allow', 'thread'],
      ['word_count', 'deny', 'thread'],
    ]);
  }, 60_000);

  it('runs on the offline demo model with --model, from the CLI, and `kiwi threads` lists and shows it', async () => {
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: () => undefined };
    const env = { ...served.env, PATH: process.env['PATH'] };
    const code = await runCli(['directives', 'run', 'review_changes', '--model', 'kiwi-demo', '--project', served.root], { env, cwd: served.root, io });
    expect(code).toBe(0);
    const text = out.join('\n');
    expect(text).toMatch(/→ git_status \{\}/);
    expect(text).toMatch(/✗ denied: word_count: denied by directive review_changes/);
    const id = /thread ([0-9a-f-]{36}): completed, 3 step\(s\)/.exec(text)?.[1] as string;
    expect(id).toBeDefined();

    const listed: string[] = [];
    expect(await runCli(['threads', 'list', '--project', served.root], { env, cwd: served.root, io: { out: (l) => listed.push(l), err: () => undefined } })).toBe(0);
    expect(listed[0]).toMatch(new RegExp(`^${id}  \\S+  review_changes  completed, 3 step\\(s\\), failure: denied  \\(kiwi-demo, client local\\)$`));
    const shown: string[] = [];
    expect(await runCli(['threads', 'show', id, '--project', served.root], { env, cwd: served.root, io: { out: (l) => shown.push(l), err: () => undefined } })).toBe(0);
    expect(shown[0]).toMatch(/^thread .*: directive review_changes \{\} on kiwi-demo/);
    // The demo's last call was denied before its answer: the run counts as ended on that failure.
    expect(shown.at(-2)).toMatch(/^ended .*: completed, 3 step\(s\), failure: denied$/);
    // Then what it used: the offline demo model costs nothing.
    expect(shown.at(-1)).toMatch(/^used: kiwi-demo \d+ in \/ \d+ out \$0\.0000; total \$0\.0000$/);
    expect((await fileThreadStore(served.root).list()).map((t) => t.header.id)).toContain(id);
    expect(readFileSync(path.join(served.root, THREADS_DIR, `${id}.jsonl`), 'utf8').split('\n').filter(Boolean).length).toBe(shown.length - 1);
  }, 60_000);

  it("stops at the directive's spend limit, counted from the price table, and says so", async () => {
    const read = openAiStream(['[TOOL: read_file {"path": "README.md"}]']);
    // Two answers only: a third request (the budget not stopping it) would find none and fail the thread.
    served.llm.replyOnce(read, read);
    const before = served.llm.requests.length;
    const outcome = await served.gateway.threads.run({ directive: 'tight', client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', limit: 'budget', steps_taken: 2 });
    expect(served.llm.requests.length - before).toBe(2);
    expect(outcome.result).toMatch(/directive tight used its spend budget \(\$0\.03 of \$0\.02\)/);
  }, 60_000);

  it("runs as a thread when an MCP client executes the directive on the gateway's /mcp, and answers with the outcome", async () => {
    const client = new Client({ name: 'threads-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`)));
    try {
      served.llm.replyOnce(openAiStream(['[TOOL: read_file {"path": "README.md"}]']), openAiStream(['Reviewed.']));
      const result = (await client.callTool({ name: 'execute', arguments: { item_type: 'directive', action: 'run', item_id: 'review_changes', parameters: { focus: 'mcp' } } })) as { structuredContent?: Record<string, unknown>; isError?: boolean };
      expect(result.isError).not.toBe(true);
      expect(result.structuredContent).toMatchObject({ status: 'completed', steps_taken: 1, result: 'Reviewed.', thread: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      const lines = await fileThreadStore(served.root).read(String(result.structuredContent?.['thread']));
      expect(lines[0]).toMatchObject({ directive: 'review_changes', inputs: { focus: 'mcp' }, client: 'local' });
    } finally {
      await client.close();
    }
  }, 60_000);

  it('refuses what it cannot run, saying how to fix it', async () => {
    const refused = async (start: Parameters<DemoGateway['gateway']['threads']['run']>[0]): Promise<string> => {
      try {
        await served.gateway.threads.run(start);
      } catch (error) {
        if (isKiwiError(error)) return error.message;
        throw error;
      }
      return 'ran';
    };
    expect(await refused({ directive: 'nope', client: 'local' })).toMatch(/^no directive "nope"; the directives are .*review_changes/);
    expect(await refused({ directive: 'review_changes', inputs: { fokus: 'x' }, client: 'local' })).toMatch(/has no input "fokus"; its inputs are focus/);
    expect(await refused({ directive: 'review_changes', client: 'local', parent: { id: 'p', depth: 3 } })).toMatch(/threads nest at most 3 deep/);
    expect(await refused({ directive: 'review_changes', client: 'local', model: 'claude-9' })).toMatch(/claude-9/);
  });
});

describe('kiwi threads follow', () => {
  it("prints a thread's lines as they are written, until its end", async () => {
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff0000';
    const writer = await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'kiwi-demo', client: 'local', depth: 1, started_at: new Date().toISOString() });
    const out: string[] = [];
    const following = runCli(['threads', 'follow', id, '--project', served.root], { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: (l) => out.push(l), err: () => undefined } });
    await expect.poll(() => out.length).toBe(1);
    await writer.append({ type: 'call', call_id: 'c1', tool: 'git_status', arguments: {} });
    await expect.poll(() => out.at(-1)).toBe('→ git_status {}');
    await writer.append({ type: 'end', status: 'completed', result: 'done', steps_taken: 1, ended_at: new Date().toISOString() });
    await writer.close();
    expect(await following).toBe(0);
    expect(out.at(-1)).toMatch(/^ended .*: completed, 1 step\(s\)$/);
  });

  it('stops on Ctrl-C while a thread runs on', async () => {
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff0001';
    // Its writer stays open: the thread runs on (its lock is held) while follow waits.
    const writer = await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'kiwi-demo', client: 'local', depth: 1, started_at: new Date().toISOString() });
    try {
      const stop = new AbortController();
      const following = runCli(['threads', 'follow', id, '--project', served.root], { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: () => undefined, err: () => undefined }, signal: stop.signal });
      setTimeout(() => stop.abort(), 300);
      expect(await following).toBe(130);
    } finally {
      await writer.close();
    }
  });

  it('stops at a thread cut short (no end, no live process), saying how to go on', async () => {
    const id = '0195aaaa-bbbb-4ccc-8ddd-eeeeffff0002';
    await (await fileThreadStore(served.root).create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'kiwi-demo', client: 'local', depth: 1, started_at: new Date().toISOString() })).close();
    const err: string[] = [];
    const code = await runCli(['threads', 'follow', id, '--project', served.root], { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: () => undefined, err: (l) => err.push(l) } });
    expect(code).toBe(1);
    expect(err.join('\n')).toMatch(`thread ${id} was cut short: no process writes it any more; \`kiwi threads resume ${id}\` goes on with it`);
  });
});

describe('nested threads', () => {
  it('a thread tool spawns a child thread one level deeper, with rights narrowed to the parent\'s; past <limits spawns> a spawn is denied', async () => {
    served.llm.replyOnce(
      openAiStream(['Delegating. [TOOL: read_on_a_budget {}]']),
      openAiStream(['Child reading. [TOOL: read_file {"path": "README.md"}]']),
      openAiStream(['Child done.']),
      openAiStream(['Once more. [TOOL: read_on_a_budget {}]']),
      openAiStream(['Parent done.']),
    );
    const parent = await served.gateway.threads.run({ directive: 'delegate', client: 'local' });
    expect(parent).toMatchObject({ status: 'completed', steps_taken: 2, result: 'Parent done.' });
    const lines = await fileThreadStore(served.root).read(parent.id);
    const results = lines.filter((l): l is Extract<ThreadLine, { type: 'result' }> => l.type === 'result');
    expect(results.map((r) => [r.tool, r.status])).toEqual([
      ['read_on_a_budget', 'ok'],
      ['read_on_a_budget', 'denied'],
    ]);
    expect(results[1]?.text).toMatch(/directive delegate may spawn at most 1 thread/);
    const child = JSON.parse(results[0]?.text ?? '{}') as { thread: string; status: string };
    expect(child.status).toBe('completed');
    const childLines = await fileThreadStore(served.root).read(child.thread);
    expect(childLines[0]).toMatchObject({ directive: 'tight', parent: parent.id, depth: 2 });
    // tight may read files, but the parent may not: the child gets the intersection.
    const read = childLines.find((l): l is Extract<ThreadLine, { type: 'result' }> => l.type === 'result');
    expect(read).toMatchObject({ tool: 'read_file', status: 'denied', text: expect.stringMatching(/directive delegate/) });
  }, 60_000);
});

describe('the model a directive runs on', () => {
  it('names the tier to map, or default when the directive names none', () => {
    const directive = { name: 'plain' } as Directive;
    const unmapped = (): undefined => undefined;
    expect(directiveModel(() => 'gpt-4o-mini', directive, {})).toBe('gpt-4o-mini');
    expect(directiveModel(unmapped, directive, { model: 'claude-x' })).toBe('claude-x');
    expect(() => directiveModel(unmapped, directive, {})).toThrow('directive plain asks for the model tier "default", which .ai/config/gateway.yaml does not map; add model_tiers: { default: MODEL }, or pass --model');
    expect(() => directiveModel(unmapped, { ...directive, modelTier: 'fast' }, {})).toThrow('the model tier "fast"');
  });
});

describe('inputs', () => {
  const directive = { name: 'd', inputs: [{ name: 'n', type: 'integer', required: true, description: '' }, { name: 'flags', type: 'object', required: false, description: '' }, { name: 'on', type: 'boolean', required: false, description: '' }] } as Directive;

  it('reads command-line text as the declared type', () => {
    expect(checkInputs(directive, { n: '3', flags: '{"a": 1}', on: 'true' })).toEqual({ n: 3, flags: { a: 1 }, on: true });
  });

  it('names the input and the type it must be', () => {
    expect(() => checkInputs(directive, {})).toThrow('directive d needs --input n=…');
    expect(() => checkInputs(directive, { n: '3.5' })).toThrow('input n of directive d must be an integer, not "3.5"');
    expect(() => checkInputs(directive, { n: '1', flags: '[1]' })).toThrow('input flags of directive d must be an object');
    expect(() => checkInputs(directive, { n: '1', on: 'yes' })).toThrow('must be true or false');
  });
});
