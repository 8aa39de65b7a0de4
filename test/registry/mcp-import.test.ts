import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { importMcpTools } from '../../src/registry/mcp-import.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';

/** `tools/list` entries as MCP servers publish them, made into mcp_tool manifests. */

const listed = (name: string, extra: Record<string, unknown> = {}) => ({ name, qualifiedName: `srv.${name}`, description: `does ${name}`, inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }, ...extra });

describe('importMcpTools', () => {
  it('makes a valid manifest per tool: its id under the server, its schema as the parameters, read-only only where the server says so', () => {
    const { tools, skipped } = importMcpTools('srv', [listed('searchIssues', { annotations: { readOnlyHint: true } }), listed('create-issue'), listed('create_issue')]);
    expect(skipped).toEqual([]);
    expect(tools.map((t) => t.id)).toEqual(['srv_search_issues', 'srv_create_issue', 'srv_create_issue_2']);
    for (const t of tools) {
      const checked = parseToolManifest(t.text, { file: `${t.id}.yaml`, display: t.id }, 'project');
      expect(checked.ok ? checked.value.parameters.map((p) => [p.name, p.required]) : checked.issues).toEqual([['q', true]]);
    }
    const [read, write] = tools.map((t) => parse(t.text) as { mutates_state: boolean; executor: string; config: { tool: string } });
    expect(read).toMatchObject({ mutates_state: false, executor: 'srv', config: { tool: 'searchIssues' } });
    expect(write).toMatchObject({ mutates_state: true, config: { tool: 'create-issue' } });
  });

  it('leaves out a tool whose input schema is not an object schema, saying which', () => {
    const { tools, skipped } = importMcpTools('srv', [listed('odd', { inputSchema: { type: 'string' } })]);
    expect(tools).toEqual([]);
    expect(skipped).toEqual(['srv.odd: its input schema is not an object schema']);
  });
});
