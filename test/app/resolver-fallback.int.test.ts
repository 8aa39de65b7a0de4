import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { allowTools } from '../helpers/demo-project.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * resolver.yaml's `fallback:` through the whole gateway: the model is routed by gateway.yaml to
 * a "local" upstream (a replay of what a llama.cpp server answers: no model runs here), its call
 * runs through the tool proxy, and its model, time and tokens reach the audit, /metrics and the
 * chat's execution.
 */

let served: DemoGateway;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-fallback-gw-',
    prepare(root) {
      const dir = path.join(root, '.ai', 'tools', 'project');
      writeFileSync(path.join(dir, 'send_greeting.mjs'), 'const [person, occasion] = process.argv.slice(2);\nconsole.log(`card sent to ${person} for ${occasion}`);\n');
      writeFileSync(
        path.join(dir, 'send_greeting.yaml'),
        [
          'tool_id: send_greeting',
          'tool_type: script',
          'executor: node_runtime',
          'version: "1.0.0"',
          'description: "Send a greeting card to a person"',
          'config: { script: send_greeting.mjs, args: ["{script}", "{person}", "{occasion}"] }',
          'parameters:',
          '  - { name: person, type: string, required: true, description: "Who receives the card" }',
          '  - { name: occasion, type: string, required: true, description: "What the card celebrates" }',
          '',
        ].join('\n'),
      );
      allowTools(root, ['send_greeting']);
      // Every call the evidence supports runs (no gate), so the fallback's part is what is tested.
      writeFileSync(path.join(root, '.ai', 'config', 'resolver.yaml'), 'target_precision: 0\nfallback: { model: qwen3-0.6b, candidates: 3 }\n');
    },
    upstreams: (url) => [`{ name: recorded, kind: openai, base_url: "${url}/v1", models: ["gpt-*"] }`, `{ name: local, kind: openai, base_url: "${url}/v1", models: ["qwen3-0.6b"] }`],
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

describe('the resolver fallback in the gateway', () => {
  it('writes the call the rules could not finish, runs it, and audits the model, its time and tokens', async () => {
    const { llm, server, gateway } = served;
    llm.replyOnce(openAiStream(['On it. [TOOL: send a greeting card to Ada Lovelace for her birthday]']), 'openai-llamacpp-fallback-call', openAiStream(['Done: the card is on its way.']));
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const before = llm.requests.length;
    const { data: completion, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Send Ada a birthday card.' }] }).withResponse();
    expect(completion.choices[0]?.message.content).toContain('card sent to Ada Lovelace for birthday');

    const asked = (await llm.request(before + 1)).body as { model: string; tools: { function: { name: string } }[] };
    expect(asked.model).toBe('qwen3-0.6b');
    expect(asked.tools.length).toBeLessThanOrEqual(3);
    expect(asked.tools.map((t) => t.function.name)).toContain('send_greeting');

    await gateway.project.audit.flush();
    const audited = await readAuditTail({ dir: gateway.project.auditDir, limit: 20 });
    const record = audited.find((r) => r.tool === 'send_greeting');
    expect(record).toMatchObject({ decision: 'allow', args: { person: 'Ada Lovelace', occasion: 'birthday' }, resolved_by: { model: 'qwen3-0.6b', upstream: 'local', input_tokens: 436, output_tokens: 31 } });

    const metrics = (await (await fetch(`${server.url}/metrics`)).json()) as { fallback: { asked: Record<string, number>; inputTokens: number } };
    expect(metrics.fallback.asked).toMatchObject({ called: 1, refused: 0, failed: 0 });
    expect(metrics.fallback.inputTokens).toBe(436);

    // The chat's execution counts the fallback model's tokens beside the upstream model's (two turns of 10 in, 5 out); neither is priced here.
    const id = response.headers.get('x-kiwi-execution-id') ?? '';
    await expect
      .poll(async () => ((await (await fetch(`${server.url}/v0/executions/${id}`)).json()) as { usage?: unknown }).usage)
      .toEqual({ models: { 'gpt-4o-mini': { input_tokens: 20, output_tokens: 10, spend_usd: 'unpriced' }, 'qwen3-0.6b': { input_tokens: 436, output_tokens: 31, spend_usd: 'unpriced' } }, spend_usd: 0, unpriced: ['gpt-4o-mini', 'qwen3-0.6b'] });
  });

  it('takes a call whose arguments nest 200,000 levels deep as a failed answer: the chat, MCP resolve and the playground answer, none fails', async () => {
    const { llm, server, root } = served;
    const deep = `{"person":"Ada Lovelace","occasion":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    const body = { id: 'c', object: 'chat.completion', created: 1, model: 'qwen3-0.6b', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'send_greeting', arguments: deep } }] }, finish_reason: 'stop' }] };
    const deepAnswer = { recording: { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } };

    llm.replyOnce(openAiStream(['On it. [TOOL: send a greeting card to Ada Lovelace for her birthday]']), deepAnswer, openAiStream(['I could not send the card.']));
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Send Ada a birthday card.' }] });
    expect(completion.choices[0]?.message.content).toContain('I could not send the card.');

    llm.replyOnce(deepAnswer);
    const mcp = new Client({ name: 'deep', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    try {
      const result = (await mcp.callTool({ name: 'resolve', arguments: { intent: 'send a greeting card to Ada Lovelace for her birthday' } })) as { content: { text: string }[] };
      const text = result.content.map((c) => c.text).join('\n');
      expect(text).not.toMatch(/INTERNAL/);
      expect(text).toMatch(/does not give `occasion`/);
    } finally {
      await mcp.close();
    }

    const admin = (await createKey(path.join(root, KEY_FILE), 'ops', { roles: ['admin'] })).key;
    llm.replyOnce(deepAnswer);
    const response = await fetch(`${server.url}/admin/v1/playground`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ intent: 'send a greeting card to Ada Lovelace for her birthday' }),
    });
    expect(response.status).toBe(200);
    // 200,000 levels take 400,000 characters: over the cap of a call, refused before parsing.
    expect(JSON.stringify(await response.json())).toMatch(/fallback model qwen3-0.6b: its arguments are 400037 characters, over the 262144-character cap of a call/);
  });
});
