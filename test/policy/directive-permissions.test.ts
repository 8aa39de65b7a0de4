import { describe, expect, it } from 'vitest';
import { checkCommand } from '../../src/policy/command-check.js';
import { capabilities, directiveContext, intersectCapabilities, rulesFromTags } from '../../src/policy/directive-permissions.js';
import { checkMcpTool, checkTool, createPermissionContext, emptyRules } from '../../src/policy/permission-context.js';
import { parseDirective } from '../../src/registry/directive-parser.js';
import type { PermissionTag } from '../../src/registry/types.js';

const tags: PermissionTag[] = [
  { kind: 'read', resource: 'filesystem', path: 'src/**' },
  { kind: 'write', resource: 'filesystem', path: './dist/**' },
  { kind: 'execute', resource: 'tool', id: 'bash' },
  { kind: 'execute', resource: 'shell', action: 'git' },
  { kind: 'execute', resource: 'kiwi-mcp', action: 'search' },
  { kind: 'execute', resource: 'spawn', action: 'thread' },
  { kind: 'execute', resource: 'mcp', id: 'files.read_file' },
  { kind: 'execute', resource: 'mcp', action: 'web' },
];

describe('rulesFromTags', () => {
  it('maps each Kiwi MCP tag to rules', () => {
    const { rules, ignored } = rulesFromTags(tags);
    expect(ignored).toEqual([]);
    expect(rules).toEqual({
      tools: ['bash', 'kiwi-mcp.search'],
      fsRead: ['src/**'],
      fsWrite: ['dist/**'],
      fsSecrets: [],
      commands: [{ executable: 'git' }],
      mcpTools: ['files.read_file', 'web.*'],
      mcpPathArgs: {},
      rateLimits: { perTool: {} },
    });
  });

  it('reports tags it cannot use, and grants nothing for them', () => {
    const bad: PermissionTag[] = [
      { kind: 'read', resource: 'database', path: 'x' },
      { kind: 'read', resource: 'filesystem' },
      { kind: 'write', resource: 'filesystem', path: '../outside/**' },
      { kind: 'execute', resource: 'rocket', action: 'launch' },
      { kind: 'execute', resource: 'tool' },
    ];
    const { rules, ignored } = rulesFromTags(bad);
    expect(rules).toEqual(emptyRules());
    expect(ignored.map((i) => i.reason)).toEqual([
      'resource "database" is not known for <read>; write <read resource="filesystem" path="src/**"/>',
      'needs path="..."; write <read resource="filesystem" path="src/**"/>',
      'path "../outside/**" must be a glob relative to the project root, without `..`, e.g. "src/**"; write <write resource="filesystem" path="dist/**"/>',
      expect.stringMatching(/^resource "rocket" is not known for <execute>; write <execute resource="tool" id="bash"\/> or /u),
      'needs id="..."; write <execute resource="tool" id="bash"/>',
    ]);
  });
});

describe('directiveContext', () => {
  const policy = createPermissionContext(
    '/proj',
    { ...emptyRules(), tools: ['bash', 'read_file'], commands: [{ executable: 'git', subcommands: ['status'] }], mcpTools: ['files.*'] },
    'policy .ai/config/policy.yaml',
  );

  it('is the intersection of the directive’s tags and the policy', () => {
    const { context } = directiveContext(policy, 'foo', tags);
    expect(context.label).toBe('directive foo');
    expect(checkTool(context, 'bash')).toEqual({ allowed: true });
    expect(checkTool(context, 'read_file')).toEqual({ allowed: false, reason: 'denied by directive foo: tool `read_file` is not in `tools`' });
    expect(checkTool(context, 'kiwi-mcp.search')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: tool `kiwi-mcp.search` is not in `tools`',
    });
    expect(checkCommand(context, ['git', 'status'])).toEqual({ allowed: true });
    expect(checkCommand(context, ['git', 'push'])).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy /u) });
    expect(checkMcpTool(context, 'files.read_file')).toEqual({ allowed: true });
    expect(checkMcpTool(context, 'files.write_file')).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by directive foo: /u) });
  });

  it('a directive that declares nothing may do nothing', () => {
    const { context } = directiveContext(policy, 'bare', []);
    expect(checkTool(context, 'bash')).toEqual({ allowed: false, reason: 'denied by directive bare: tool `bash` is not in `tools`' });
  });
});

describe('capabilities', () => {
  it('derives the compat capability strings, sorted, write implying read', () => {
    expect(capabilities(tags)).toEqual([
      'fs.read',
      'fs.write',
      'kiwi-mcp.search',
      'mcp.files.read_file',
      'mcp.web.*',
      'process.exec',
      'spawn.thread',
      'tool.bash',
    ]);
    expect(capabilities([{ kind: 'write', resource: 'filesystem', path: 'dist/**' }])).toEqual(['fs.read', 'fs.write']);
    expect(capabilities([])).toEqual([]);
  });

  it('a child’s capabilities are the intersection with its parent’s', () => {
    expect(intersectCapabilities(['fs.read', 'tool.bash'], ['fs.read', 'fs.write', 'tool.bash', 'spawn.thread'])).toEqual(['fs.read', 'tool.bash']);
  });
});

describe('a loaded <execute resource="mcp"> tag', () => {
  const everything = createPermissionContext('/proj', { ...emptyRules(), tools: ['*'], mcpTools: ['*'], fsRead: ['**'], commands: [{ executable: 'git' }] }, 'policy p');

  function loadedTags(permissions: string): PermissionTag[] {
    const text = `<directive name="reader" version="1.0.0"><metadata><description>Reads</description><permissions>${permissions}</permissions></metadata></directive>`;
    const result = parseDirective(text, { file: '/proj/.ai/directives/reader.md', display: '.ai/directives/reader.md' }, 'project');
    if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
    return result.value.permissions;
  }

  it('grants exactly that MCP tool and nothing else, even under a policy that allows everything', () => {
    const tags = loadedTags('<execute resource="mcp" id="files.read_file"/>');
    expect(rulesFromTags(tags)).toEqual({ rules: { ...emptyRules(), mcpTools: ['files.read_file'] }, ignored: [] });
    expect(capabilities(tags)).toEqual(['mcp.files.read_file']);
    const { context } = directiveContext(everything, 'reader', tags);
    expect(checkMcpTool(context, 'files.read_file')).toEqual({ allowed: true });
    for (const other of ['files.write_file', 'files.read_file2', 'files.read', 'other.read_file', 'files.read_file.x']) {
      expect(checkMcpTool(context, other)).toEqual({ allowed: false, reason: `denied by directive reader: MCP tool \`${other}\` is not in \`mcp.tools\`` });
    }
    expect(checkTool(context, 'files.read_file')).toMatchObject({ allowed: false });
    expect(checkTool(context, 'bash')).toMatchObject({ allowed: false });
    expect(checkCommand(context, ['git', 'status'])).toMatchObject({ allowed: false });
  });

  it('with a server alone grants that server’s tools only', () => {
    const { context } = directiveContext(everything, 'reader', loadedTags('<execute resource="mcp" action="files"/>'));
    expect(checkMcpTool(context, 'files.read_file')).toEqual({ allowed: true });
    expect(checkMcpTool(context, 'files.write_file')).toEqual({ allowed: true });
    expect(checkMcpTool(context, 'web.fetch')).toMatchObject({ allowed: false });
    expect(checkMcpTool(context, 'filesystem.read_file')).toMatchObject({ allowed: false });
  });

  it('still cannot reach past the policy', () => {
    const narrow = createPermissionContext('/proj', { ...emptyRules(), mcpTools: ['web.*'] }, 'policy p');
    const { context } = directiveContext(narrow, 'reader', loadedTags('<execute resource="mcp" id="files.read_file"/>'));
    expect(checkMcpTool(context, 'files.read_file')).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy p: /u) });
  });
});
