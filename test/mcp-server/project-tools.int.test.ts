import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { parseToolListing } from '../../src/mcp-server/project-tools.js';
import { connectMetaClient, createMetaProject, type MetaProject } from '../fixtures/mcp-meta/meta-project.js';

/**
 * The project's tools listed over MCP beside the meta-tools, with the real MCP SDK client over an
 * in-memory pair: what the policy grants, each with its real schema, run by name through the proxy
 * (audited like `execute`), a profile by tags, a short list that grows as search and load find
 * tools (announced with tools/list_changed), and the meta-tools alone when asked.
 */

let meta: MetaProject;
beforeAll(() => {
  meta = createMetaProject();
});
afterAll(() => meta?.remove());

const META = ['execute', 'help', 'load', 'resolve', 'search'];
const textOf = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('project tools over MCP', () => {
  it('lists the granted tools with their real schemas and runs one by its name, audited as any call', async () => {
    const session = await connectMetaClient(meta, 'real-tools');
    try {
      const { tools } = await session.client.listTools();
      // wipe_disk exists but the policy does not grant it.
      expect(tools.map((t) => t.name).filter((n) => !META.includes(n)).sort()).toEqual(['echo_text', 'hang_forever', 'read_doc']);
      const echo = tools.find((t) => t.name === 'echo_text');
      expect(echo).toMatchObject({
        description: 'Echo a text message back',
        inputSchema: { type: 'object', properties: { text: { type: 'string', description: 'The text to echo' } }, required: ['text'], additionalProperties: false },
        annotations: { readOnlyHint: true, destructiveHint: false },
      });
      const r = (await session.client.callTool({ name: 'echo_text', arguments: { text: 'hello from a real tool' } })) as CallToolResult;
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(textOf(r)).toContain('hello from a real tool');
      const audit = await readAuditTail({ dir: session.project.auditDir, limit: 50 });
      expect(audit.at(-1)).toMatchObject({ tool: 'echo_text', decision: 'allow', source: 'mcp', args: { text: 'hello from a real tool' } });
    } finally {
      await session.close();
    }
  });

  it('refuses arguments its schema does not take, saying which, and runs nothing', async () => {
    const session = await connectMetaClient(meta, 'real-tools-bad');
    try {
      const before = (await readAuditTail({ dir: session.project.auditDir, limit: 1000 })).length;
      const r = (await session.client.callTool({ name: 'echo_text', arguments: { text: 5 } })) as CallToolResult;
      expect(r.isError).toBe(true);
      expect(textOf(r)).toMatch(/text/);
      expect(await readAuditTail({ dir: session.project.auditDir, limit: 1000 })).toHaveLength(before);
    } finally {
      await session.close();
    }
  });

  it('lists a profile by tags, or the meta-tools alone', async () => {
    const tagged = await connectMetaClient(meta, 'profile', { listing: parseToolListing({ tags: 'files,nothing-else' }) });
    const metaOnly = await connectMetaClient(meta, 'meta-only', { listing: parseToolListing({ tools: 'meta' }) });
    try {
      expect((await tagged.client.listTools()).tools.map((t) => t.name).filter((n) => !META.includes(n))).toEqual(['read_doc']);
      expect((await metaOnly.client.listTools()).tools.map((t) => t.name).sort()).toEqual(META);
    } finally {
      await Promise.all([tagged.close(), metaOnly.close()]);
    }
  });

  it('lists the first tools of a catalog too large for its list, and adds each tool search or load finds, telling the client', async () => {
    const session = await connectMetaClient(meta, 'short-list', { listing: parseToolListing({ max: '1' }) });
    try {
      let changed = 0;
      session.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
      const names = async (): Promise<string[]> => (await session.client.listTools()).tools.map((t) => t.name).filter((n) => !META.includes(n)).sort();
      expect(await names()).toEqual(['echo_text']);
      await session.client.callTool({ name: 'search', arguments: { item_type: 'tool', query: 'read a document file', limit: 1 } });
      expect(await names()).toEqual(['echo_text', 'read_doc']);
      await session.client.callTool({ name: 'load', arguments: { item_type: 'tool', item_id: 'hang_forever' } });
      expect(await names()).toEqual(['echo_text', 'hang_forever', 'read_doc']);
      // A tool the policy does not grant never joins the list, whoever finds it.
      await session.client.callTool({ name: 'load', arguments: { item_type: 'tool', item_id: 'wipe_disk' } });
      expect(await names()).toEqual(['echo_text', 'hang_forever', 'read_doc']);
      expect(changed).toBe(2);
    } finally {
      await session.close();
    }
  });
});

describe('parseToolListing', () => {
  it('takes the defaults, a size, tags and "meta"', () => {
    expect(parseToolListing({})).toEqual({ real: true, max: 40 });
    expect(parseToolListing({ tools: 'real', max: '500', tags: ' git, files ' })).toEqual({ real: true, max: 500, tags: ['git', 'files'] });
    expect(parseToolListing({ tools: 'meta' })).toMatchObject({ real: false });
  });

  it('refuses what it cannot read, saying what to write', () => {
    expect(() => parseToolListing({ tools: 'all' })).toThrow(/tools must be "real" .* or "meta"/);
    for (const max of ['0', '501', '1.5', '-3', 'ten', '']) expect(() => parseToolListing({ max })).toThrow(/max must be a whole number from 1 to 500/);
    expect(() => parseToolListing({ tags: ',' })).toThrow(/tags must be 1 to 20 tag names/);
    expect(() => parseToolListing({ tags: 'ok,bad tag' })).toThrow(/"bad tag" is not one/);
    expect(() => parseToolListing({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`).join(',') })).toThrow(/1 to 20/);
  });
});
