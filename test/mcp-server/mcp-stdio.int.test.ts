import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough, type Writable } from 'node:stream';
import { Client as ModernClient, type CallToolResult as ModernCallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mcpCommand } from '../../src/app/commands/mcp.js';
import { runCli } from '../../src/app/run-cli.js';
import { REPO_ROOT } from '../helpers/temp-project.js';
import { createMetaProject, type MetaProject } from '../fixtures/mcp-meta/meta-project.js';
import { kiwiCli } from '../helpers/run-resources.js';
import { failure } from '../helpers/expect-failure.js';

// The real CLI with the real resolver (USE-lite in a worker): loading the model takes seconds.
const SLOW = 120_000;

let meta: MetaProject;
const children: ChildProcessWithoutNullStreams[] = [];
let client: Client | undefined;

beforeAll(() => {
  meta = createMetaProject();
});

afterEach(async () => {
  await client?.close();
  client = undefined;
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

afterAll(() => {
  meta?.remove();
});

function childEnv(): Record<string, string> {
  return { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', KIWI_USER_DIR: meta.userDir };
}

const ARGS = [...kiwiCli(), 'mcp', '--project'];

function text(result: CallToolResult): string {
  const part = result.content[0];
  return part?.type === 'text' ? part.text : '';
}

/** Spawns `kiwi mcp` with raw pipes, to see exactly what reaches stdout and how the process ends. */
function spawnRaw(): { child: ChildProcessWithoutNullStreams; lines: AsyncIterator<string>; stderr: () => string } {
  const child = spawn(process.execPath, [...ARGS, meta.temp.root], { cwd: REPO_ROOT, env: childEnv() });
  children.push(child);
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (err.length < 64 * 1024) err += chunk.toString('utf8');
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return { child, lines, stderr: () => err };
}

async function initialize(stdin: Writable, lines: AsyncIterator<string>): Promise<Record<string, any>> {
  const request = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  stdin.write(`${JSON.stringify(request)}\n`);
  const next = await lines.next();
  expect(next.done).toBeFalsy();
  // stdout is the protocol: the first thing on it must be the answer, not a progress line.
  return JSON.parse(next.value as string) as Record<string, any>;
}

describe('kiwi mcp (stdio)', () => {
  it(
    'serves search and execute to the SDK client over a spawned process',
    async () => {
      const transport = new StdioClientTransport({ command: process.execPath, args: [...ARGS, meta.temp.root], cwd: REPO_ROOT, env: childEnv(), stderr: 'pipe' });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      client = new Client({ name: 'stdio-test', version: '1.0.0' });
      await client.connect(transport);

      const found = (await client.callTool({ name: 'search', arguments: { item_type: 'tool', query: 'echo a text message' } })) as CallToolResult;
      expect(found.isError, text(found)).toBeFalsy();
      expect((found.structuredContent as { results: Array<{ id: string }> }).results[0]?.id).toBe('echo_text');

      const ran = (await client.callTool({
        name: 'execute',
        arguments: { item_type: 'tool', action: 'run', item_id: 'echo_text', parameters: { text: 'hello over stdio' } },
      })) as CallToolResult;
      expect(ran.isError, text(ran)).toBe(false);
      expect(text(ran)).toMatch(/\n<<<DATA (\w+)\nhello over stdio\nDATA \1>>>$/);

      const denied = (await client.callTool({
        name: 'execute',
        arguments: { item_type: 'tool', action: 'run', item_id: 'read_doc', parameters: { path: '../../etc/passwd' } },
      })) as CallToolResult;
      expect(denied.isError).toBe(true);
      expect(text(denied)).toMatch(/^denied: /);

      const user = (await client.callTool({ name: 'load', arguments: { item_type: 'knowledge', item_id: 'user-note' } })) as CallToolResult;
      expect(text(user)).toContain('git status -sb');
      expect(stderr).toMatch(/MCP server on stdio for /);
    },
    SLOW,
  );

  it(
    'answers a client of 2026-07-28 (the SDK 2.x client, negotiating) with no initialize',
    async () => {
      // A subclass of the SDK's transport probes in place; its own class would start a second `kiwi mcp` to probe.
      class InPlace extends ModernStdioTransport {}
      const transport = new InPlace({ command: process.execPath, args: [...ARGS, meta.temp.root], cwd: REPO_ROOT, env: childEnv(), stderr: 'pipe' });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const modern = new ModernClient({ name: 'stdio-2026', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      try {
        await modern.connect(transport);
        expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
        const ran = (await modern.callTool({
          name: 'execute',
          arguments: { item_type: 'tool', action: 'run', item_id: 'echo_text', parameters: { text: 'hello in 2026' } },
        })) as ModernCallToolResult;
        expect(ran.isError, JSON.stringify(ran.content)).toBe(false);
        expect(text(ran as CallToolResult)).toMatch(/\n<<<DATA (\w+)\nhello in 2026\nDATA \1>>>$/);
        expect((await modern.listTools()).tools.map((tool) => tool.name)).toContain('resolve');
        expect(stderr).toMatch(/MCP server on stdio for /);
      } finally {
        await modern.close();
      }
    },
    SLOW,
  );

  it(
    'writes only protocol to stdout, answers an oversized line (past 4 MiB) and a malformed one with JSON-RPC errors, goes on serving, and exits 0 when the client closes stdin',
    async () => {
      const { child, lines, stderr } = spawnRaw();
      const answer = await initialize(child.stdin, lines);
      expect(answer).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'kiwi-gateway' } } });
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { pad: 'x'.repeat(5 * 1024 * 1024) } })}\n`);
      child.stdin.write('{"jsonrpc": "2.0", "id": 3,\n');
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' })}\n`);
      const answers: Record<string, any>[] = [];
      for (let i = 0; i < 3; i++) answers.push(JSON.parse((await lines.next()).value as string) as Record<string, any>);
      expect(answers[0]).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('longer than the limit of 4194304 bytes') } });
      expect(answers[1]).toMatchObject({ id: null, error: { code: -32700 } });
      expect(answers[2]).toMatchObject({ id: 4, result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'search' })]) } });
      expect(child.exitCode).toBeNull();
      expect(stderr()).toContain('kiwi mcp: A message line is longer than the limit');

      child.stdin.end();
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code, stderr()).toBe(0);
      const rest: string[] = [];
      for (let next = await lines.next(); !next.done; next = await lines.next()) rest.push(next.value);
      expect(rest).toEqual([]);
    },
    SLOW,
  );

  it(
    'exits 0 on SIGTERM while a client is still connected',
    async () => {
      const { child, lines, stderr } = spawnRaw();
      await initialize(child.stdin, lines);
      child.kill('SIGTERM');
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code, stderr()).toBe(0);
    },
    SLOW,
  );

  it('fails with a usage line for unknown flags, before opening anything', async () => {
    const err: string[] = [];
    const code = await runCli(['mcp', '--project', meta.temp.root, '--bogus'], { env: childEnv(), cwd: REPO_ROOT, io: { out: () => undefined, err: (line) => err.push(line) } });
    expect(code).toBe(2);
    expect(err.join('\n')).toMatch(/kiwi mcp: .*--bogus.*usage: kiwi mcp \[--project DIR\]/);
  });

  it('ends with the reason when the index cannot be opened (here: an ONNX model that is not there)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-mcp-broken-'));
    try {
      mkdirSync(path.join(dir, '.ai', 'config'), { recursive: true });
      writeFileSync(path.join(dir, '.ai', 'config', 'resolver.yaml'), 'embedder: { kind: onnx, model_dir: no-such-model }\n');
      const stdin = new PassThrough();
      const err: string[] = [];
      const serving = mcpCommand({ argv: [], env: childEnv(), cwd: dir, io: { out: () => undefined, err: (line) => err.push(line) } }, { stdin, stdout: new PassThrough() });
      const error = await failure(serving, 'INVALID_INPUT');
      expect(error.message).toContain(`ONNX model folder ${path.join(dir, 'no-such-model')} does not exist`);
      stdin.destroy();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a folder without .ai/ (creating nothing there), a file and a missing folder, saying how to point at a project', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'kiwi-mcp-empty-'));
    try {
      const run = async (argv: string[], cwd = empty) => {
        const err: string[] = [];
        const code = await runCli(['mcp', ...argv], { env: childEnv(), cwd, io: { out: () => undefined, err: (line) => err.push(line) } });
        return { code, err: err.join('\n') };
      };
      const here = await run([]);
      expect(here.code).toBe(2);
      expect(here.err).toBe(`kiwi mcp: ${empty} has no .ai/ folder, so there are no project tools to serve; run \`kiwi init\` there to make one, pass --project DIR (the folder that holds .ai/) or set KIWI_PROJECT, or add --allow-empty to serve it anyway (only your user tools; .ai/ is created there for the index)`);
      expect(readdirSync(empty)).toEqual([]);
      const file = await run(['--project', 'README.md'], REPO_ROOT);
      expect(file).toEqual({ code: 2, err: `kiwi mcp: --project ${path.join(REPO_ROOT, 'README.md')} is not a folder; give the folder that holds .ai/, e.g. --project ${REPO_ROOT}` });
      expect((await run(['--project', 'nope'])).err).toBe(`kiwi mcp: --project ${path.join(empty, 'nope')} does not exist; give the folder that holds .ai/`);
      expect(await run(['--max', '0'])).toEqual({ code: 2, err: 'kiwi mcp: --max must be a whole number from 1 to 500 (how many tools are listed at first), got "0"' });
      expect((await run(['--tools', 'all'])).err).toMatch(/^kiwi mcp: --tools must be "real" .* or "meta"/);

      // Allowed explicitly, it serves (a search, here, until stdin ends) and makes .ai/ for its index.
      const stdin = new PassThrough();
      const stdout = new PassThrough();
      const answers = createInterface({ input: stdout })[Symbol.asyncIterator]();
      const err: string[] = [];
      const serving = mcpCommand({ argv: ['--allow-empty'], env: childEnv(), cwd: empty, io: { out: () => undefined, err: (line) => err.push(line) } }, { stdin, stdout });
      expect(await initialize(stdin, answers)).toMatchObject({ id: 1, result: { serverInfo: { name: 'kiwi-gateway' } } });
      stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'search', arguments: { item_type: 'tool', query: 'list files' } } })}\n`);
      expect(JSON.parse((await answers.next()).value as string)).toMatchObject({ id: 2, result: { structuredContent: { query: 'list files', results: [] } } });
      stdin.end();
      const code = await serving;
      expect(code, err.join('\n')).toBe(0);
      expect(err.join('\n')).toContain(`kiwi: MCP server on stdio for ${realpathSync(empty)}`);
      expect(readdirSync(empty)).toEqual(['.ai']);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
