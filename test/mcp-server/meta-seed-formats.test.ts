import { copyFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMetaClient, createMetaProject, type MetaProject } from '../fixtures/mcp-meta/meta-project.js';

/** Kiwi's knowledge and directives written as tool manifests, and its descriptive keys, through the MCP meta-tools. */
const SEEDS = path.resolve(import.meta.dirname, '../fixtures/seed-formats');
let meta: MetaProject;
let client: Client;
let session: Awaited<ReturnType<typeof connectMetaClient>>;

beforeAll(async () => {
  meta = createMetaProject();
  for (const name of ['api_design_patterns.yaml', 'email_enricher.yaml']) copyFileSync(path.join(SEEDS, name), path.join(meta.temp.root, '.ai', 'tools', name));
  meta.temp.write('.ai/tools/summarize_docs.yaml', 'tool_id: summarize_docs\ntool_type: directive\nexecutor: llm_runtime\ndescription: "the directive as a tool"\n');
  session = await connectMetaClient(meta, 'seed-test');
  ({ client } = session);
});

afterAll(async () => {
  await session?.close();
  meta?.remove();
});

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

const text = (r: CallToolResult) => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('meta-tools on Kiwi manifests', () => {
  it('execute of a knowledge tool (no executor) returns what it is, running nothing', async () => {
    const r = await call('execute', { item_type: 'tool', action: 'run', item_id: 'api_design_patterns' });
    expect(r.isError).toBeFalsy();
    expect(text(r)).toBe('knowledge api_design_patterns 1.0.0: Common REST API design patterns\nsource: https://example.com/api-guide');
    expect(r.structuredContent).toMatchObject({ status: 'ready', tool_type: 'knowledge', executor: null });
  });

  it('execute of a directive tool returns the steps of the directive of that name', async () => {
    const r = await call('execute', { item_type: 'tool', action: 'run', item_id: 'summarize_docs', parameters: { topic: 'x' } });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ status: 'ready', name: 'summarize_docs', provided_inputs: { topic: 'x' } });
  });

  it('load shows requires (in config) and outputs of email_enricher.yaml', async () => {
    const r = await call('load', { item_type: 'tool', item_id: 'email_enricher' });
    const item = (r.structuredContent as Record<string, any>)['item'];
    expect(item.config).toMatchObject({ entrypoint: 'main.py', requires: ['httpx>=0.24.0', 'pydantic>=2.0'] });
    expect(item.outputs).toMatchObject({ type: 'object', properties: { domain: { type: 'string' } } });
  });
});
