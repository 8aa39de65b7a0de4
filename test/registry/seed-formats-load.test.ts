import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveChain, validateChains } from '../../src/executor/chain.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import type { Tool } from '../../src/registry/types.js';

/** Kiwi's own manifests (copied unchanged from shared/compat/seed-formats): each loads, or is refused saying how to fix it. */
const DIR = path.resolve(import.meta.dirname, '../fixtures/seed-formats');

function parse(name: string, text = readFileSync(path.join(DIR, name), 'utf8')) {
  return parseToolManifest(text, { file: path.join(DIR, name), display: name }, 'project');
}

function load(name: string): Tool {
  const result = parse(name);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.value;
}

function refusal(name: string, text?: string): string {
  const result = parse(name, text);
  if (result.ok) throw new Error(`${name} loaded`);
  return result.issues.map((i) => i.message).join('\n');
}

describe('seed formats: loading Kiwi manifests unchanged', () => {
  it('api_design_patterns.yaml: knowledge with executor: null loads, has no chain to check, and is refused as a call', () => {
    const tool = load('api_design_patterns.yaml');
    expect(tool).toMatchObject({ type: 'knowledge', executor: null, config: { entry_type: 'pattern' } });
    const tools = new Map([[tool.id, tool]]);
    expect(validateChains(tools)).toEqual([]);
    expect(() => resolveChain(tools, tool.id)).toThrow(/is knowledge: it is read, not run/);
  });

  it('bash_runtime.yaml: a runtime on subprocess', () => {
    expect(load('bash_runtime.yaml')).toMatchObject({ type: 'runtime', executor: 'subprocess', config: { command: 'bash', timeout_default: 300 } });
  });

  it('deno_runtime.yaml: a runtime on subprocess', () => {
    expect(load('deno_runtime.yaml')).toMatchObject({ type: 'runtime', executor: 'subprocess', config: { command: 'deno', args: ['run', '--allow-all'] } });
  });

  it('deploy_staging.yaml: tool_type bash maps to a script on bash_runtime, but the mis-indented requires is refused naming the fix', () => {
    const message = refusal('deploy_staging.yaml');
    expect(message).not.toMatch(/entrypoint: unknown key/);
    expect(message).toMatch(/commands.*indent it under requires:/);
    expect(message).toMatch(/environment.*indent it under requires:/);
    const fixed = readFileSync(path.join(DIR, 'deploy_staging.yaml'), 'utf8')
      .replace('commands:', '  commands:')
      .replace('environment:', '  environment:');
    const tool = parse('deploy_staging.yaml', fixed);
    expect(tool.ok && tool.value).toMatchObject({ type: 'script', executor: 'bash_runtime', config: { entrypoint: 'deploy.sh' }, requires: { commands: ['kubectl', 'docker'], environment: ['KUBECONFIG'] } });
  });

  it('email_enricher.yaml: entrypoint, config.requires and top-level outputs are kept', () => {
    const tool = load('email_enricher.yaml');
    expect(tool).toMatchObject({ type: 'script', executor: 'python_runtime', config: { entrypoint: 'main.py', requires: ['httpx>=0.24.0', 'pydantic>=2.0'] } });
    expect(tool.outputs).toMatchObject({ type: 'object', properties: { company_name: { type: 'string' } } });
  });

  it('filesystem_mcp.yaml: a stdio MCP server', () => {
    expect(load('filesystem_mcp.yaml')).toMatchObject({ type: 'mcp_server', config: { transport: 'stdio', command: 'npx' } });
  });

  it('github_create_pr.yaml: an MCP tool naming its remote tool', () => {
    expect(load('github_create_pr.yaml')).toMatchObject({ type: 'mcp_tool', executor: 'github_mcp', config: { mcp_tool_name: 'create_pull_request' } });
  });

  it('github_mcp.yaml: a stdio MCP server with a token from the environment', () => {
    expect(load('github_mcp.yaml')).toMatchObject({ type: 'mcp_server', config: { env: { GITHUB_TOKEN: '${GITHUB_TOKEN}' } } });
  });

  it('hosted_tools_mcp.yaml: a websocket MCP server loads (see seed-formats-run and websocket-transport)', () => {
    expect(load('hosted_tools_mcp.yaml')).toMatchObject({ type: 'mcp_server', executor: 'http_client', config: { transport: 'websocket' } });
  });

  it('http_client.yaml: the primitive with capabilities, kept on the Tool', () => {
    expect(load('http_client.yaml')).toMatchObject({ type: 'primitive', executor: null, capabilities: ['request', 'streaming', 'websocket', 'sse'] });
  });

  it('llm_runtime.yaml: a runtime on http_client', () => {
    expect(load('llm_runtime.yaml')).toMatchObject({ type: 'runtime', executor: 'http_client', config: { model_tiers: { fast: { provider: 'anthropic' } } } });
  });

  it('node_runtime.yaml: a runtime on subprocess', () => {
    expect(load('node_runtime.yaml')).toMatchObject({ type: 'runtime', config: { command: 'node' } });
  });

  it('python_runtime.yaml: a runtime on subprocess', () => {
    expect(load('python_runtime.yaml')).toMatchObject({ type: 'runtime', config: { command: 'python3' } });
  });

  it('remote_llm_mcp.yaml: an SSE MCP server', () => {
    expect(load('remote_llm_mcp.yaml')).toMatchObject({ type: 'mcp_server', config: { transport: 'sse', headers: { Authorization: 'Bearer ${REMOTE_API_KEY}' } } });
  });

  it('research_thread.yaml: a thread tool on llm_runtime', () => {
    expect(load('research_thread.yaml')).toMatchObject({ type: 'thread', executor: 'llm_runtime', config: { directive: 'research_topic' } });
  });

  it('research_topic.yaml: two manifests in one mapping are refused for the repeated keys; each half loads on its own', () => {
    expect(refusal('research_topic.yaml')).toMatch(/research_topic\.yaml:15:1: invalid YAML: Map keys must be unique: "tool_id" is already set above in the same mapping; a second item starts here — put it in its own file/);
    const text = readFileSync(path.join(DIR, 'research_topic.yaml'), 'utf8');
    const cut = text.indexOf('# A thread');
    const directive = parse('research_topic.yaml', text.slice(0, cut));
    expect(directive.ok && directive.value).toMatchObject({ id: 'research_topic', type: 'directive', executor: 'llm_runtime' });
    const thread = parse('research_topic.yaml', text.slice(cut));
    expect(thread.ok && thread.value).toMatchObject({ id: 'research_thread', type: 'thread' });
  });

  it('slack_webhook.yaml: an API tool with url from the environment', () => {
    expect(load('slack_webhook.yaml')).toMatchObject({ type: 'api', config: { url: '${SLACK_WEBHOOK_URL}' } });
  });

  it('subprocess.yaml: the primitive with capabilities', () => {
    expect(load('subprocess.yaml')).toMatchObject({ type: 'primitive', capabilities: ['spawn', 'stdio', 'signals', 'timeout'] });
  });

  it('supabase_execute_sql.yaml: an MCP tool naming its remote tool', () => {
    expect(load('supabase_execute_sql.yaml')).toMatchObject({ type: 'mcp_tool', executor: 'supabase_mcp', config: { mcp_tool_name: 'execute_sql' } });
  });

  it('supabase_mcp.yaml: a stdio MCP server', () => {
    expect(load('supabase_mcp.yaml')).toMatchObject({ type: 'mcp_server', config: { transport: 'stdio', startup_timeout: 10 } });
  });

  it('thread_directive.yaml: its parameters are not indented, so the YAML is refused at the line; indented, tool_type python and requires load', () => {
    expect(refusal('thread_directive.yaml')).toMatch(/thread_directive\.yaml:\d+/);
    const text = readFileSync(path.join(DIR, 'thread_directive.yaml'), 'utf8');
    const fixed = text.slice(0, text.indexOf('parameters:')).concat('parameters:\n', text.slice(text.indexOf('parameters:') + 12).replace(/^(?!- )/gm, '  '));
    const tool = parse('thread_directive.yaml', fixed);
    expect(tool.ok && tool.value).toMatchObject({ type: 'script', executor: 'python_runtime', requires: ['spawn.thread', 'kiwi-mcp.execute'], parameters: [{ name: 'directive_name' }, { name: 'inputs', type: 'object' }] });
  });

  it('weather_forecast.yaml: an API tool with a JSONPath response_transform', () => {
    expect(load('weather_forecast.yaml')).toMatchObject({ type: 'api', config: { response_transform: '$.forecast.daily[0:7]' } });
  });
});
