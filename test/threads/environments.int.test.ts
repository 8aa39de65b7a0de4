import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import type { ThreadLine } from '../../src/threads/thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { refusal } from '../helpers/expect-failure.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * Environments (`.ai/environments/`) on the demo project: saved by `kiwi env save`, run from the
 * gateway's threads, `kiwi env run` and MCP `execute` on a recorded-stream upstream. A thread from
 * one runs the directive as it was pinned, with its inputs' defaults, only its tools (git runs for
 * real), and its tools and knowledge in its first message; a changed item refuses the run.
 */

let served: DemoGateway;

const cli = async (...argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli([...argv, '--project', served.root], { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out, err };
};

const calls = (lines: ThreadLine[]): string[] => lines.flatMap((l) => (l.type === 'result' ? [`${l.tool}:${l.status}`] : []));

beforeAll(async () => {
  served = await serveDemoGateway({ prefix: 'kiwi-environments-', config: 'model_tiers: { balanced: gpt-4o-mini, fast: gpt-4o-mini }' });
  const saved = await cli('env', 'save', 'status_only', '--directive', 'review_changes', '--tool', 'git_status', '--knowledge', 'kiwi-permissions', '--input', 'focus=docs', '--tier', 'fast', '--description', 'the status, nothing more');
  expect(saved.err).toEqual([]);
  expect(saved.code).toBe(0);
}, 120_000);

afterAll(async () => {
  await served?.close();
});

describe('an environment', () => {
  it("is shipped in the demo, as saved: an item it names changed without `kiwi env save review_src --force`", async () => {
    const shown = await cli('env', 'show', 'review_src');
    expect(shown.out.at(-1)).toBe('  every item is as it was saved');
    expect(shown.code).toBe(0);
  });

  it('is saved with each item pinned, listed and shown as saved', async () => {
    const file = readFileSync(path.join(served.root, '.ai', 'environments', 'status_only.yaml'), 'utf8');
    expect(file).toMatch(/directive:\n {2}name: review_changes\n {2}version: 1\.0\.0\n {2}digest: sha256:[0-9a-f]{64}\n/);
    expect(file).toMatch(/tools:\n {2}- id: git_status\n/);
    expect(file).toMatch(/model_tier: fast/);
    expect((await cli('env', 'list')).out).toContain('status_only  review_changes 1.0.0  1 tool(s)  as saved  — the status, nothing more');
    const shown = await cli('env', 'show', 'status_only');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('  every item is as it was saved');
    expect((await cli('env', 'save', 'status_only', '--directive', 'review_changes')).err.join('\n')).toMatch(/status_only\.yaml exists; pass --force to replace it/);
  });

  it("starts a thread with its inputs, its tools and knowledge in the first message, and only its tools: the directive's others are denied", async () => {
    served.llm.replyOnce(
      openAiStream(['Status first. [TOOL: git_status {}]']),
      openAiStream(['Now the diff. [TOOL: git_diff {"ref": "HEAD"}]']),
      openAiStream(['Review: the tree is as committed.']),
    );
    const before = served.llm.requests.length;
    const outcome = await served.gateway.threads.run({ directive: 'review_changes', environment: 'status_only', client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', steps_taken: 2, result: 'Review: the tree is as committed.' });
    const lines = await fileThreadStore(served.root).read(outcome.id);
    expect(lines[0]).toMatchObject({ type: 'thread', directive: 'review_changes', version: '1.0.0', environment: 'status_only', inputs: { focus: 'docs' }, model: 'gpt-4o-mini' });
    expect(calls(lines)).toEqual(['git_status:ok', 'git_diff:denied']);
    const denied = lines.find((l) => l.type === 'result' && l.tool === 'git_diff');
    expect(denied).toMatchObject({ text: expect.stringContaining('denied by environment status_only: tool `git_diff` is not in `tools`') });
    const system = JSON.stringify(served.llm.requests[before]?.body);
    expect(system).toContain('This run starts from the environment \\"status_only\\".');
    expect(system).toContain('- git_status(');
    expect(system).toContain('Nothing runs unless `.ai/config/policy.yaml` allows it.');
    expect(system).toMatch(/<<<DATA [0-9a-f]{24}/);
  }, 60_000);

  it('goes on in the environment when its thread is resumed: still only its tools', async () => {
    served.llm.replyOnce(openAiStream(['[TOOL: git_status {}]']));
    // The second turn finds no recorded answer: the upstream fails, and the thread with it.
    const failed = await served.gateway.threads.run({ directive: 'review_changes', environment: 'status_only', client: 'local' });
    expect(failed.status).toBe('failed');
    served.llm.replyOnce(openAiStream(['[TOOL: read_file {"path": "README.md"}]']), openAiStream(['Done.']));
    const resumed = await served.gateway.threads.resume({ id: failed.id, client: 'local' });
    expect(resumed.status).toBe('completed');
    expect(calls(await fileThreadStore(served.root).read(failed.id))).toEqual(['git_status:ok', 'read_file:denied']);
  }, 60_000);

  it('refuses to run once an item it pinned has changed, naming it, until saved again', async () => {
    const tool = path.join(served.root, '.ai', 'tools', 'project', 'git_status.yaml');
    const original = readFileSync(tool, 'utf8');
    writeFileSync(tool, original.replace(/^description: .*$/m, 'description: "The status, said another way"'));
    // The project is read at start: a second gateway sees the change.
    const { openGateway } = await import('../../src/app/open-gateway.js');
    const gateway = await openGateway({ projectDir: served.root, env: served.env, unattended: true });
    try {
      expect(await refusal(gateway.threads.run({ directive: 'review_changes', environment: 'status_only', client: 'local' }))).toMatch(
        /^CONFLICT: environment status_only was saved at .* with what has changed since: tool git_status changed without a new version \(1\.0\.0\)\. Review the change, then `kiwi env save status_only --force`/,
      );
      const shown = await cli('env', 'show', 'status_only');
      expect(shown.code).toBe(1);
      expect(shown.out.at(-1)).toMatch(/tool git_status changed without a new version/);
      const again = ['env', 'save', 'status_only', '--directive', 'review_changes', '--tool', 'git_status', '--input', 'focus=docs', '--force'];
      expect((await cli(...again)).code).toBe(0);
      expect((await cli('env', 'show', 'status_only')).out.at(-1)).toBe('  every item is as it was saved');
      writeFileSync(tool, original);
      expect((await cli(...again, '--knowledge', 'kiwi-permissions', '--tier', 'fast', '--description', 'the status, nothing more')).code).toBe(0);
    } finally {
      await gateway.close();
      writeFileSync(tool, original);
    }
  }, 60_000);

  it('is run by `kiwi env run` and by MCP execute, which must name its directive', async () => {
    served.llm.replyOnce(openAiStream(['[TOOL: git_status {}]']), openAiStream(['Reviewed from the CLI.']));
    const ran = await cli('env', 'run', 'status_only', '--input', 'focus=src');
    expect(ran.code).toBe(0);
    expect(ran.out.find((l) => l.startsWith('thread '))).toMatch(/^thread [0-9a-f-]{36}: completed, 1 step\(s\)/);
    const client = new Client({ name: 'environments-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`)));
    try {
      served.llm.replyOnce(openAiStream(['Reviewed over MCP.']));
      const result = (await client.callTool({ name: 'execute', arguments: { item_type: 'directive', action: 'run', item_id: 'review_changes', environment: 'status_only' } })) as { structuredContent?: Record<string, unknown>; isError?: boolean };
      expect(result.structuredContent).toMatchObject({ status: 'completed', result: 'Reviewed over MCP.' });
      const header = (await fileThreadStore(served.root).read(String(result.structuredContent?.['thread'])))[0];
      expect(header).toMatchObject({ environment: 'status_only', inputs: { focus: 'docs' } });
      const wrong = (await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'git_status', environment: 'status_only' } })) as { content: Array<{ text: string }>; isError?: boolean };
      expect(wrong.isError).toBe(true);
      expect(wrong.content[0]?.text).toMatch(/environment is for a directive's "run"/);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('says what to fix for a name, a file or a start that is wrong', async () => {
    expect(await refusal(served.gateway.threads.run({ directive: 'review_changes', environment: 'nope', client: 'local' }))).toBe(
      'NOT_FOUND: no environment nope (.ai/environments/nope.yaml); the environments are review_src, status_only',
    );
    expect(await refusal(served.gateway.threads.run({ directive: 'review_changes', environment: '../status_only', client: 'local' }))).toMatch(/^INVALID_INPUT: "\.\.\/status_only" is not an environment name/);
    expect((await cli('env', 'save', 'x', '--directive', 'review_changes', '--input', 'fokus=1')).err.join('')).toMatch(/has no input "fokus"; its inputs are focus/);
    expect((await cli('env', 'save', 'x', '--directive', 'review_changes', '--tool', 'nope')).err.join('')).toMatch(/there is no tool nope/);
    writeFileSync(path.join(served.root, '.ai', 'environments', 'broken.yaml'), 'name: broken\ndirective: { name: review_changes, version: "1.0.0", digest: "sha256:abc" }\ntoolz: []\n');
    const listed = await cli('env', 'list');
    expect(listed.code).toBe(1);
    expect(listed.err.join('\n')).toMatch(/broken\.yaml:2:.*digest: must be "sha256:" and 64 hex digits/);
    expect(listed.err.join('\n')).toMatch(/broken\.yaml:3:1: .*toolz/);
  });
});
