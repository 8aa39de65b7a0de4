import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { type ThreadLine } from '../../src/threads/thread-store.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * What a client with a narrow key sends to widen its rights through a directive: it executes the
 * demo's review_changes (which may run git_status) over the gateway's /mcp. The thread runs with
 * the intersection of the directive's rights and the key's own policy, so git_status is denied.
 * Without the key, the same request is refused at the door.
 */

let served: DemoGateway;
let narrow: string;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-thread-rights-',
    config: 'model_tiers: { balanced: gpt-4o-mini }\n',
    async prepare(root) {
      writeFileSync(path.join(root, '.ai', 'config', 'narrow-policy.yaml'), 'version: 1\ntools: [read_file]\nfilesystem: { read: ["**"] }\n');
      // Made before the gateway opens: from its first request on, every request needs a key.
      narrow = (await createKey(path.join(root, KEY_FILE), 'narrow', { policy: '.ai/config/narrow-policy.yaml' })).key;
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const run = { name: 'execute', arguments: { item_type: 'directive', action: 'run', item_id: 'review_changes', parameters: {} } };

describe('a directive run as a thread never widens its caller', () => {
  it("denies the directive's own tools that the client's key may not use", async () => {
    const client = new Client({ name: 'narrow-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${narrow}` } } }));
    try {
      served.llm.replyOnce(openAiStream(['[TOOL: git_status {}]']), openAiStream(['Nothing to review.']));
      const result = (await client.callTool(run)) as { structuredContent?: { thread?: string } };
      const lines = await fileThreadStore(served.root).read(String(result.structuredContent?.thread));
      expect(lines[0]).toMatchObject({ client: 'narrow' });
      const denied = lines.find((l): l is Extract<ThreadLine, { type: 'result' }> => l.type === 'result');
      expect(denied).toMatchObject({ tool: 'git_status', status: 'denied', text: expect.stringMatching(/git_status/) });
    } finally {
      await client.close();
    }
  }, 60_000);

  it('refuses the same request without a key, and from a web page', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: run });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    expect((await fetch(`${served.server.url}/mcp`, { method: 'POST', headers, body })).status).toBe(401);
    expect((await fetch(`${served.server.url}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${narrow}`, origin: 'https://evil.example' }, body })).status).toBe(403);
  });
});
