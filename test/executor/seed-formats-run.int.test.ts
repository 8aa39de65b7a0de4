import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveChain } from '../../src/executor/chain.js';
import { executePlan } from '../../src/executor/execute-plan.js';
import { planCall, planDynamicMcp } from '../../src/executor/plan.js';
import { validateArgs } from '../../src/executor/validate-args.js';
import { createMcpClientPool } from '../../src/mcp-client/client-pool.js';
import { createRequirementCheck } from '../../src/primitives/python-requirements.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import type { Tool } from '../../src/registry/types.js';
import { startJsonServer, startSseMcpServer } from '../helpers/seed-format-servers.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

/** Kiwi's manifests (unchanged copies of shared/compat/seed-formats) called against local stand-ins. */
const SEEDS = path.resolve(import.meta.dirname, '../fixtures/seed-formats');
const STANDIN = path.resolve(import.meta.dirname, '../fixtures/seed-formats-standins/named-tools-server.mjs');
const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-seed-run-')));
const pool = createMcpClientPool({ connectTimeoutMs: 20_000 });
const deps = { http: createHttpClient(), mcp: pool, requirements: createRequirementCheck() };
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  await pool.close();
  await Promise.all(cleanups.map((c) => c()));
  rmSync(dir, { recursive: true, force: true });
});

/** Loads a seed file as if it lay in `dir` (where its scripts are), optionally with config changed to reach a stand-in. */
function seed(name: string, config: Record<string, unknown> = {}, text = readFileSync(path.join(SEEDS, name), 'utf8')): Tool {
  const result = parseToolManifest(text, { file: path.join(dir, name), display: name }, 'project');
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return { ...result.value, config: { ...result.value.config, ...config } };
}

const tools = (...list: Tool[]) => new Map(list.map((t) => [t.id, t]));
const ctx = (env: Record<string, string> = {}, root = dir) => ({ root, env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env } });

async function call(list: Tool[], id: string, args: Record<string, unknown>, env: Record<string, string> = {}) {
  const registry = tools(...list);
  const plan = planCall(resolveChain(registry, id), validateArgs(registry.get(id) as Tool, args), ctx(env));
  return { plan, result: await executePlan(plan, deps) };
}

/** A tiny script tool that runs `file` on `runtime`, written as Kiwi writes one (tool_type alias, entrypoint). */
function scriptTool(id: string, type: string, runtime: string, file: string, body: string, extra = ''): Tool {
  writeFileSync(path.join(dir, file), body);
  return seed(`${id}.yaml`, {}, `tool_id: ${id}\ntool_type: ${type}\nexecutor: ${runtime}\nconfig:\n  entrypoint: ${file}\n${extra}parameters:\n  - { name: name, type: string, required: true }\n`);
}

describe('seed formats: Kiwi manifests run against local stand-ins', () => {
  it('weather_forecast.yaml: the API key header from the environment, and $.forecast.daily[0:7] keeps seven days', async () => {
    const server = await startJsonServer({ forecast: { daily: Array.from({ length: 10 }, (_, day) => ({ day })) } });
    cleanups.push(server.close);
    const weather = seed('weather_forecast.yaml');
    const local = { url_template: String(weather.config['url_template']).replace('https://api.weather.com', server.url) };
    const { result } = await call([{ ...weather, config: { ...weather.config, ...local } }], 'weather_forecast', { lat: 52.5, lon: 13.4 }, { WEATHER_API_KEY: 'wk' });
    expect(result.data).toEqual([0, 1, 2, 3, 4, 5, 6].map((day) => ({ day })));
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/v1/forecast?lat=52.5&lon=13.4&units=metric', headers: { 'x-api-key': 'wk' } });
  });

  it('slack_webhook.yaml: url from ${SLACK_WEBHOOK_URL}, a JSON body with the default channel', async () => {
    const server = await startJsonServer({ ok: true });
    cleanups.push(server.close);
    const { result } = await call([seed('slack_webhook.yaml')], 'slack_webhook', { message: 'deployed' }, { SLACK_WEBHOOK_URL: `${server.url}/hooks/T1` });
    expect(result.isError).toBe(false);
    expect(server.requests[0]).toMatchObject({ method: 'POST', url: '/hooks/T1' });
    expect(JSON.parse(server.requests[0]?.body ?? '')).toEqual({ text: 'deployed', channel: '#general' });
  });

  it('supabase_execute_sql.yaml + supabase_mcp.yaml: mcp_tool_name sends the call to the remote execute_sql, with the token from the environment', async () => {
    const server = seed('supabase_mcp.yaml', { command: process.execPath, args: [STANDIN] });
    const { plan, result } = await call([seed('supabase_execute_sql.yaml'), server], 'supabase_execute_sql', { project_id: 'p1', query: 'select 1' }, { SUPABASE_ACCESS_TOKEN: 'sb' });
    expect(plan).toMatchObject({ kind: 'mcp', tool: 'execute_sql' });
    expect(JSON.parse(result.text)).toEqual({ tool: 'execute_sql', args: { project_id: 'p1', query: 'select 1' }, token: 'sb' });
  });

  it('github_create_pr.yaml + github_mcp.yaml: the call goes to create_pull_request with base defaulting to main', async () => {
    const server = seed('github_mcp.yaml', { command: process.execPath, args: [STANDIN] });
    const { result } = await call([seed('github_create_pr.yaml'), server], 'github_create_pr', { repo: 'o/r', title: 't', head: 'h' }, { GITHUB_TOKEN: 'gh' });
    expect(JSON.parse(result.text)).toEqual({ tool: 'create_pull_request', args: { repo: 'o/r', title: 't', head: 'h', base: 'main' }, token: 'gh' });
  });

  it('filesystem_mcp.yaml: runs as written (npx finds the installed server) on ${ALLOWED_PATH}', async () => {
    writeFileSync(path.join(dir, 'note.txt'), 'hello from the seed test');
    const server = seed('filesystem_mcp.yaml');
    const plan = planDynamicMcp(server, resolveChain(tools(server), server.id), 'read_text_file', { path: path.join(dir, 'note.txt') }, ctx({ ALLOWED_PATH: dir }, REPO_ROOT));
    expect(plan.server).toMatchObject({ transport: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', dir] });
    const result = await executePlan(plan, deps);
    expect(result.text).toContain('hello from the seed test');
  }, 30_000);

  it('remote_llm_mcp.yaml: an SSE MCP server, the Authorization header from ${REMOTE_API_KEY} on every request', async () => {
    const server = await startSseMcpServer();
    cleanups.push(server.close);
    const remote = seed('remote_llm_mcp.yaml', { url: `${server.url}/mcp/sse` });
    const plan = planDynamicMcp(remote, resolveChain(tools(remote), remote.id), 'echo', { text: 'hi' }, ctx({ REMOTE_API_KEY: 'rk' }));
    const result = await executePlan(plan, deps);
    expect(result.text).toBe('echo: hi');
    expect(server.requests.length).toBeGreaterThan(1);
    expect(server.requests.every((r) => r.headers.authorization === 'Bearer rk')).toBe(true);
  });

  it('hosted_tools_mcp.yaml: transport websocket plans a WebSocket server with its bearer token on the handshake', () => {
    const hosted = seed('hosted_tools_mcp.yaml');
    expect(planDynamicMcp(hosted, resolveChain(tools(hosted), hosted.id), 'x', {}, ctx({ HOSTED_TOOLS_TOKEN: 't' })).server).toEqual({ name: 'hosted_tools_mcp', transport: 'websocket', url: 'wss://tools.example.com/mcp', headers: { Authorization: 'Bearer t' } });
  });

  it('email_enricher.yaml + python_runtime.yaml: entrypoint main.py runs after python3, the arguments as JSON on stdin, once its requires are installed', async () => {
    writeFileSync(path.join(dir, 'main.py'), 'import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({"domain": args["email"].split("@")[1], "company_name": "Stand-in"}))\n');
    // Its `requires: [httpx>=0.24.0, pydantic>=2.0]` is checked first: both are "installed" as dist-info folders on its PYTHONPATH.
    const site = path.join(dir, 'site');
    mkdirSync(site, { recursive: true });
    const enricher = seed('email_enricher.yaml', { env: { PYTHONPATH: site } });
    for (const [name, version] of [['httpx', '0.27.0'], ['pydantic', '2.7.1']]) {
      mkdirSync(path.join(site, `${name}-${version}.dist-info`));
      writeFileSync(path.join(site, `${name}-${version}.dist-info`, 'METADATA'), `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`);
    }
    const { plan, result } = await call([enricher, seed('python_runtime.yaml')], 'email_enricher', { email: 'a@example.org' });
    expect(plan).toMatchObject({ kind: 'subprocess', argv: ['python3', path.join(dir, 'main.py')] });
    expect(result.data).toEqual({ domain: 'example.org', company_name: 'Stand-in' });
    const fn = seed('email_enricher.yaml', { entrypoint: 'main.py:enrich' });
    expect(() => planCall(resolveChain(tools(fn, seed('python_runtime.yaml')), fn.id), { email: 'a@b.c' }, ctx())).toThrow(/names a function/);
  });

  it('bash_runtime.yaml: tool_type bash runs its script on bash with arguments also as KIWI_PARAM_*; a shell string is refused naming argv', async () => {
    const greet = scriptTool('greet', 'bash', 'bash_runtime', 'greet.sh', 'echo "hello $KIWI_PARAM_NAME"\n', '  params_as_env: true\n');
    const { plan, result } = await call([greet, seed('bash_runtime.yaml')], 'greet', { name: 'kiwi; rm -rf /' });
    expect(plan).toMatchObject({ argv: ['bash', path.join(dir, 'greet.sh')], timeoutMs: 300_000 });
    expect(result.text).toBe('hello kiwi; rm -rf /\n');
    const shell = seed('bash_runtime.yaml', { command: 'bash -c "echo hi | wc -c"' });
    await expect(call([greet, shell], 'greet', { name: 'x' })).rejects.toThrow(/is a shell string.*command: bash, args: \[\.\.\.\] — an argv array/);
    const spaced = seed('bash_runtime.yaml', { command: 'bash --norc' });
    await expect(call([greet, spaced], 'greet', { name: 'x' })).rejects.toThrow(/command: bash and args: \["--norc"\] \(an argv array\)/);
  });

  it('deno_runtime.yaml: runs the script when deno is installed, else says deno was not found', async () => {
    const hello = scriptTool('hello_deno', 'script', 'deno_runtime', 'hello.ts', 'console.log("hi from deno");\n');
    const run = call([hello, seed('deno_runtime.yaml')], 'hello_deno', { name: 'x' });
    const deno = await run.then((r) => r.result.text, (error: Error) => error.message);
    expect(deno).toMatch(/^hi from deno\n$|executable deno was not found/);
  });

  it('node_runtime.yaml: tool_type node runs its script on node', async () => {
    const hello = scriptTool('hello_node', 'node', 'node_runtime', 'hello.mjs', 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => console.log(JSON.parse(s).name));\n');
    const { result } = await call([hello, seed('node_runtime.yaml')], 'hello_node', { name: 'kiwi' });
    expect(result.text).toBe('kiwi\n');
  });

  it('subprocess.yaml: the declared primitive ends a chain like the built-in one', async () => {
    const hello = scriptTool('hello_sub', 'node', 'node_runtime', 'hello2.mjs', 'console.log("ok");\n');
    const registry = tools(hello, seed('node_runtime.yaml'), seed('subprocess.yaml'));
    expect(resolveChain(registry, 'hello_sub').links.map((l) => l.id)).toEqual(['hello_sub', 'node_runtime', 'subprocess']);
    expect((await executePlan(planCall(resolveChain(registry, 'hello_sub'), { name: 'x' }, ctx()), deps)).text).toBe('ok\n');
  });

  it('http_client.yaml: the declared primitive ends an API chain like the built-in one', async () => {
    const server = await startJsonServer({ ok: 1 });
    cleanups.push(server.close);
    const { result } = await call([seed('slack_webhook.yaml'), seed('http_client.yaml')], 'slack_webhook', { message: 'm' }, { SLACK_WEBHOOK_URL: server.url });
    expect(result.data).toEqual({ ok: 1 });
  });

  it('llm_runtime.yaml + research_thread.yaml: a thread call plans its directive as a thread on the tool\'s tier (the gateway runs it; test/threads)', () => {
    const registry = tools(seed('research_thread.yaml'), seed('llm_runtime.yaml'));
    expect(planCall(resolveChain(registry, 'research_thread'), { topic: 't' }, ctx())).toEqual({ kind: 'thread', directive: 'research_topic', inputs: { topic: 't' }, tier: 'fast' });
  });

  it('research_topic.yaml: its directive half, called as a tool, plans the directive as a thread too', () => {
    const text = readFileSync(path.join(SEEDS, 'research_topic.yaml'), 'utf8');
    const directive = seed('research_topic.yaml', {}, text.slice(0, text.indexOf('# A thread')));
    expect(planCall(resolveChain(tools(directive, seed('llm_runtime.yaml')), 'research_topic'), {}, ctx())).toMatchObject({ kind: 'thread', directive: 'research_topic', inputs: {} });
  });
});
