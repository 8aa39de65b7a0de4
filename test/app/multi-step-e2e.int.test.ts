import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import type { Gateway } from '../../src/app/open-gateway.js';
import type { Listener } from '../../src/http/server/listen.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import type { ReplayLlmServer } from '../helpers/replay-llm-server.js';

/**
 * An intent written as ordered steps, through the whole gateway as `kiwi serve` wires it (real
 * resolver, tool proxy, tools and openai client; the upstream replays recorded streams): each
 * step resolves and runs in order through the tool proxy, and the results go back in one message.
 */

let llm: ReplayLlmServer;
let gateway: Gateway;
let server: Listener;
let served: DemoGateway | undefined;

beforeAll(async () => {
  served = await serveDemoGateway({ prefix: 'kiwi-steps-' });
  ({ gateway, server, llm } = served);
}, 120_000);

afterAll(async () => {
  await served?.close();
});

async function chat(turn: string): Promise<{ kiwi: Array<{ type: string; call?: { tool: string }; intent?: string; reason?: string }>; feedback: string }> {
  llm.replyOnce(openAiStream([turn]), openAiStream(['Done.']));
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used' });
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Look at the README.' }] });
  const kiwi = [];
  for await (const chunk of stream) {
    const extra = (chunk as unknown as { kiwi?: { type: string } }).kiwi;
    if (extra) kiwi.push(extra);
  }
  const second = (llm.requests.at(-1)?.body ?? {}) as { messages: { content: string }[] };
  return { kiwi, feedback: second.messages.at(-1)?.content ?? '' };
}

describe('an intent written as ordered steps', () => {
  it('runs both tools in order through the tool proxy and feeds both results back', async () => {
    const { kiwi, feedback } = await chat('[TOOL: word_count {"path": "README.md"} and then read_file {"path": "README.md"}]');
    expect(kiwi.map((e) => e.type)).toEqual(['start', 'intent', 'call', 'result', 'call', 'result', 'turn', 'finish']);
    expect(kiwi.filter((e) => e.type === 'call').map((e) => e.call?.tool)).toEqual(['word_count', 'read_file']);
    expect(feedback).toMatch(/step 1 of 2 of one intent: word_count \{"path": "README\.md"\}\nCall: word_count[\s\S]*"words": 4[\s\S]*step 2 of 2 of one intent: read_file \{"path": "README\.md"\}\nCall: read_file[\s\S]*one two three/);
    expect(feedback).not.toContain('Not run');

    await gateway.project.audit.flush();
    const audited = await readAuditTail({ dir: gateway.project.auditDir, limit: 10, session: gateway.project.session });
    expect(audited.filter((r) => r.source === 'gateway' && r.decision === 'allow').map((r) => r.tool)).toEqual(expect.arrayContaining(['word_count', 'read_file']));
  });

  it('stops at a step that does not resolve, and tells the agent what ran and what did not', async () => {
    const { kiwi, feedback } = await chat('[TOOL: word_count {"path": "README.md"}, then no_such_tool {"x": 1}, then read_file {"path": "README.md"}]');
    expect(kiwi.filter((e) => e.type === 'call').map((e) => e.call?.tool)).toEqual(['word_count']);
    expect(kiwi.filter((e) => e.type === 'unresolved').map((e) => [e.intent, e.reason])).toEqual([
      ['no_such_tool {"x": 1}', expect.stringMatching(/there is no tool `no_such_tool`/)],
      ['read_file {"path": "README.md"}', expect.stringMatching(/^not run: the steps after step 2 of 3/)],
    ]);
    expect(feedback).toMatch(/step 1 of 3 of one intent[\s\S]*"words": 4/);
    expect(feedback).toMatch(/step 2 of 3 of one intent: no_such_tool[\s\S]*Not run: there is no tool/);
    expect(feedback).toContain('Not run, because they come after this step and it did not succeed: "read_file {\\"path\\": \\"README.md\\"}"');
  });

  it('runs the steps in order from the MCP resolve meta-tool too', async () => {
    const client = new Client({ name: 'steps', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    try {
      const result = (await client.callTool({ name: 'resolve', arguments: { intent: 'word_count {"path": "README.md"}, then read_file {"path": "README.md"}' } })) as {
        structuredContent?: { status: string; steps: Array<{ call?: { tool: string }; result?: { status: string } }> };
        isError?: boolean;
      };
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent?.status).toBe('done');
      expect(result.structuredContent?.steps.map((s) => [s.call?.tool, s.result?.status])).toEqual([
        ['word_count', 'ok'],
        ['read_file', 'ok'],
      ]);
    } finally {
      await client.close();
    }
  });
});
