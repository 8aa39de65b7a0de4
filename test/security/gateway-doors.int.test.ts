import Anthropic from '@anthropic-ai/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { runCli } from '../../src/app/run-cli.js';
import { openGateway, type Gateway } from '../../src/app/open-gateway.js';
import { listen, type Listener } from '../../src/http/server/listen.js';
import { copyDemoProject } from '../helpers/demo-project.js';
import { kiwiCli } from '../helpers/run-resources.js';

/**
 * The attacks of issue 9 against the whole gateway as `kiwi serve` wires it, on a copy of the demo
 * project with a `.env` and a `.git/config` holding secrets: first open on loopback with no keys
 * (the quick start), then with client keys, using the real openai, @anthropic-ai/sdk and MCP SDK
 * clients. The upstream is the offline demo model, so no LLM is faked.
 */

const SECRET = 'sk-live-do-not-leak-0123456789';
let root: string;
let env: Record<string, string | undefined>;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with a Host header of our choosing (fetch does not let a caller set Host). */
function raw(base: string, route: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  const url = new URL(route, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: body === undefined ? 'GET' : 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli([...args, '--project', root], { env, cwd: root, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function mcpClient(base: string, key?: string): Promise<Client> {
  const client = new Client({ name: 'doors-test', version: '1.0.0' });
  const requestInit = key === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${key}` } } };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), requestInit));
  return client;
}

type ToolText = { content: { type: string; text: string }[]; isError?: boolean };

async function execute(client: Client, tool: string, parameters: Record<string, unknown>): Promise<ToolText> {
  return (await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: tool, parameters } })) as ToolText;
}

const text = (r: ToolText): string => r.content.map((c) => c.text).join('\n');

function auditFilesText(): string {
  const dir = path.join(root, '.ai', 'logs', 'audit');
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl'));
  return files.map((f) => readFileSync(path.join(dir, f), 'utf8')).join('');
}

beforeAll(() => {
  root = copyDemoProject('kiwi-doors-');
  writeFileSync(path.join(root, '.env'), `OPENAI_API_KEY=${SECRET}\n`);
  mkdirSync(path.join(root, '.git'), { recursive: true });
  writeFileSync(path.join(root, '.git', 'config'), `[remote "origin"]\n\turl = https://user:${SECRET}@example.com/repo.git\n`);
  env = { PATH: process.env['PATH'], HOME: root, KIWI_USER_DIR: path.join(root, 'no-user-tier') };
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('open on loopback with no keys (the quick start)', () => {
  let gateway: Gateway;
  let server: Listener;

  beforeAll(async () => {
    gateway = await openGateway({ projectDir: root, env, userDir: path.join(root, 'no-user-tier') });
    server = await listen((request, env) => gateway.app.fetch(request, env), { host: '127.0.0.1', port: 0 });
  }, 120_000);

  afterAll(async () => {
    await server?.close(1000);
    await gateway?.close();
  });

  const CHAT = JSON.stringify({ model: 'kiwi-demo', messages: [{ role: 'user', content: 'read package.json' }] });

  it('attack 1: a page on another host name (DNS rebinding) cannot chat, and gets a reason', async () => {
    for (const route of ['/v1/chat/completions', '/v1/messages', '/v1/responses']) {
      const res = await raw(server.url, route, { host: `attacker.example:${server.port}`, origin: `http://attacker.example:${server.port}`, 'content-type': 'application/json' }, CHAT);
      expect(res.status, route).toBe(403);
      expect(JSON.parse(res.body).error.message).toMatch(/Host "attacker.example:\d+" is not a name of this gateway \(DNS-rebinding protection\)/);
    }
    // The same request under the gateway's own name is served: the check is the name, nothing else.
    const own = await raw(server.url, '/v1/chat/completions', { host: `127.0.0.1:${server.port}`, 'content-type': 'application/json' }, CHAT);
    expect(own.status).toBe(200);
  });

  it('attack 1: /mcp under an attacker Host opens no session, even without an Origin', async () => {
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'evil', version: '1' } } });
    const res = await raw(server.url, '/mcp', { host: 'attacker.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, init);
    expect(res.status).toBe(403);
    expect(res.headers['mcp-session-id']).toBeUndefined();
    expect(JSON.parse(res.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 } });
  });

  it('attack 1: a browser page of another origin is refused on every endpoint, with no CORS headers', async () => {
    for (const route of ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/models', '/metrics']) {
      const res = await raw(server.url, route, { host: `localhost:${server.port}`, origin: 'https://evil.example', 'content-type': 'application/json' }, route.startsWith('/v1/m') && route !== '/v1/messages' ? undefined : CHAT);
      expect(res.status, route).toBe(403);
      expect(JSON.parse(res.body).error.message, route).toMatch(/Origin "https:\/\/evil.example" may not call this gateway/);
      expect(res.headers['access-control-allow-origin'], route).toBeUndefined();
    }
  });

  it('attack 2: external MCP tools cannot read .env or .git/config, over /mcp, and the secret stays out of the audit', async () => {
    const client = await mcpClient(server.url);
    try {
      for (const file of ['.env', '.git/config']) {
        const result = await execute(client, 'files.read_text_file', { path: file });
        expect(result.isError, file).toBe(true);
        expect(text(result), file).toMatch(/denied by policy .ai\/config\/policy.yaml: path `[^`]+` is (an environment file|git metadata)/);
        expect(text(result)).not.toContain(SECRET);
      }
      const logs = await execute(client, 'files.read_text_file', { path: '.ai/logs/audit' });
      expect(text(logs)).toMatch(/the gateway's audit log|is not in `filesystem.read`/);
      // Allowed files still work, through the real filesystem server, at the real path checked.
      const readme = await execute(client, 'files.read_text_file', { path: 'README.md' });
      expect(readme.isError).toBeFalsy();
      expect(text(readme)).toContain('one two three');
    } finally {
      await client.close();
    }
    await gateway.project.audit.flush();
    expect(auditFilesText()).not.toContain(SECRET);
  });

  it('attack 2: the same holds for `kiwi mcp` on stdio', async () => {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const client = new Client({ name: 'doors-stdio', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [...kiwiCli(), 'mcp', '--project', root], env: env as Record<string, string>, cwd: root, stderr: 'ignore' }));
    try {
      const result = await execute(client, 'files.read_text_file', { path: '.env' });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(/is an environment file/);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('refuses to listen on a network address without keys, saying how to make one', async () => {
    const { code, err } = await cli(['serve', '--host', '0.0.0.0', '--port', '0']);
    expect(code).toBe(1);
    expect(err).toMatch(/refusing to listen on 0\.0\.0\.0 without client keys.*kiwi keys create NAME/);
  }, 120_000);
});

describe('with client keys', () => {
  let gateway: Gateway;
  let server: Listener;
  let alice: string;
  let bob: string;
  let carol: string;

  beforeAll(async () => {
    // Alice's own policy narrows the project's: read_file only, and two calls per ten minutes.
    mkdirSync(path.join(root, '.ai', 'config', 'clients'), { recursive: true });
    writeFileSync(
      path.join(root, '.ai', 'config', 'clients', 'alice.yaml'),
      'version: 1\ntools: [read_file]\nfilesystem: { read: ["**"] }\ncommands: [{ executable: node }]\nrate_limits: { per_tool: { "*": { max: 2, per_ms: 600000 } } }\n',
    );
    const a = await cli(['keys', 'create', 'alice', '--policy', '.ai/config/clients/alice.yaml', '--json']);
    expect(a.code, a.err).toBe(0);
    alice = (JSON.parse(a.out) as { key: string }).key;
    const b = await cli(['keys', 'create', 'bob']);
    expect(b.code, b.err).toBe(0);
    bob = b.out.trim();
    const c = await cli(['keys', 'create', 'carol', '--policy', '.ai/config/clients/alice.yaml']);
    expect(c.code, c.err).toBe(0);
    carol = c.out.trim();
    writeFileSync(path.join(root, 'package.json'), '{ "name": "doors-demo" }\n');
    gateway = await openGateway({ projectDir: root, env, userDir: path.join(root, 'no-user-tier'), host: '0.0.0.0' });
    server = await listen((request, env) => gateway.app.fetch(request, env), { host: '127.0.0.1', port: 0 });
  }, 120_000);

  afterAll(async () => {
    await server?.close(1000);
    await gateway?.close();
  });

  it('keeps only hashes, in a file only its owner can read, and lists keys without them', async () => {
    const file = path.join(root, '.ai', 'state', 'keys.json');
    const stored = readFileSync(file, 'utf8');
    expect(stored).not.toContain(alice);
    expect(stored).not.toContain(bob);
    expect(stored).toMatch(/"hash": "sha256:[0-9a-f]{64}"/);
    expect(statSync(file).mode & 0o077).toBe(0);
    const { out } = await cli(['keys', 'list']);
    expect(out).toMatch(/key_[0-9a-f]{8} {2}alice {2}roles client {2}created .* {2}policy .ai\/config\/clients\/alice.yaml/);
    expect(out).not.toContain('sha256');
  });

  it('the openai client: no key is a 401 AuthenticationError, a key is served', async () => {
    const without = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-not-a-kiwi-key', maxRetries: 0 });
    const error = await without.models.list().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).message).toMatch(/The API key is not valid/);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: bob, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'kiwi-demo', messages: [{ role: 'user', content: 'how many words are in the README?' }] });
    expect(completion.choices[0]?.message.content).toContain('(offline demo model)');
  });

  it('the anthropic client: a wrong key is a 401 AuthenticationError, x-api-key is served; no key at all is a 401 too', async () => {
    const wrong = new Anthropic({ baseURL: server.url, apiKey: 'sk-ant-not-a-kiwi-key', maxRetries: 0 });
    const error = await wrong.messages.create({ model: 'kiwi-demo', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((error as Error).message).toMatch(/The API key is not valid/);
    // The SDK will not send a request without a key; a bare one is refused with the way to fix it.
    const bare = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await bare.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'authentication_error', message: expect.stringMatching(/needs a client key.*kiwi keys create NAME/) });
    const client = new Anthropic({ baseURL: server.url, apiKey: bob, maxRetries: 0 });
    const message = await client.messages.create({ model: 'kiwi-demo', max_tokens: 1024, messages: [{ role: 'user', content: 'read /etc/passwd' }] });
    expect(message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toContain('(offline demo model)');
  });

  it('the Responses API and the model list: no key or a wrong key is a 401 the openai client raises, before any work; a key is served', async () => {
    const bare = await raw(server.url, '/v1/responses', { host: `127.0.0.1:${server.port}`, 'content-type': 'application/json' }, JSON.stringify({ model: 'kiwi-demo', input: 'hi' }));
    expect(bare.status).toBe(401);
    expect(JSON.parse(bare.body).error.message).toMatch(/needs a client key.*kiwi keys create NAME/);
    const models = await raw(server.url, '/v1/models', { host: `127.0.0.1:${server.port}` });
    expect(models.status).toBe(401);
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'kiwi_deadbeef_notarealkey', maxRetries: 0 });
    const error = await wrong.responses.create({ model: 'kiwi-demo', input: 'hi' }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: bob, maxRetries: 0 });
    expect((await client.responses.create({ model: 'kiwi-demo', input: 'how many words are in the README?' })).output_text).toContain('(offline demo model)');
  });

  it("the MCP SDK client: no key cannot connect, a key can, and sees the tools its key's policy grants; /healthz tells details only with a key", async () => {
    await expect(mcpClient(server.url)).rejects.toThrow(/401|needs a client key/);
    const META = ['execute', 'help', 'load', 'resolve', 'search'];
    const client = await mcpClient(server.url, bob);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining([...META, 'read_file', 'word_count']));
    await client.close();
    // Alice's own policy grants read_file only: the rest of the project's tools are not listed to her.
    const narrowed = await mcpClient(server.url, alice);
    expect((await narrowed.listTools()).tools.map((t) => t.name).sort()).toEqual([...META.slice(0, 3), 'read_file', ...META.slice(3)]);
    // A tool her key does not grant cannot be called by its name either: it is not there for her.
    const refused = (await narrowed.callTool({ name: 'word_count', arguments: { path: 'README.md' } }).catch((e: unknown) => ({ isError: true, content: [{ type: 'text', text: String(e) }] }))) as { isError?: boolean; content: unknown };
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toMatch(/word_count/);
    expect(JSON.stringify(refused.content)).not.toMatch(/"words"/);
    await narrowed.close();
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${server.url}/healthz`, { headers: { authorization: `Bearer ${bob}` } })).json()).toMatchObject({ status: 'ok', tools: expect.any(Number) });
  });

  it("attack 3: rate limits follow the client, not the session; another client is not affected; a client's policy narrows the project's", async () => {
    const first = await mcpClient(server.url, alice);
    const second = await mcpClient(server.url, alice);
    const other = await mcpClient(server.url, bob);
    try {
      for (let i = 0; i < 2; i++) expect((await execute(first, 'read_file', { path: 'README.md' })).isError, `call ${i}`).toBeFalsy();
      expect(text(await execute(first, 'read_file', { path: 'README.md' }))).toMatch(/rate limit/i);
      // A new session of the same client does not get fresh limits.
      expect(text(await execute(second, 'read_file', { path: 'README.md' }))).toMatch(/rate limit/i);
      expect((await execute(other, 'read_file', { path: 'README.md' })).isError).toBeFalsy();
      expect(text(await execute(first, 'word_count', { path: 'README.md' }))).toMatch(/denied by client alice .*word_count/);
    } finally {
      await Promise.all([first.close(), second.close(), other.close()]);
    }
    await gateway.project.audit.flush();
    const records = await readAuditTail({ dir: gateway.project.auditDir, limit: 100 });
    const byAlice = records.filter((r) => r.client === 'alice');
    expect(byAlice.length).toBe(5);
    expect(new Set(byAlice.map((r) => r.session)).size).toBe(2);
    expect(records.some((r) => r.client === 'bob' && r.decision === 'allow')).toBe(true);
  });

  it('attack 3: chat requests count against their own client: one client using up its limit leaves the next one served', async () => {
    const ask = async (key: string): Promise<string> => {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });
      const completion = await client.chat.completions.create({ model: 'kiwi-demo', messages: [{ role: 'user', content: 'read package.json' }] });
      return completion.choices[0]?.message.content ?? '';
    };
    const answers = await Promise.all([ask(carol), ask(carol), ask(carol)]);
    expect(answers.filter((a) => a.includes('doors-demo'))).toHaveLength(2);
    expect(answers.filter((a) => /rate limit for tool `read_file`.*is used up/.test(a))).toHaveLength(1);
    expect(await ask(bob)).toContain('doors-demo');
  });

  it("a client cannot use another client's MCP session", async () => {
    const client = await mcpClient(server.url, alice);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? '';
    try {
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bob}`, 'mcp-session-id': sessionId, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/Session not found/);
    } finally {
      await client.close();
    }
  });
});
