import { describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import {
  checkMcpTool,
  checkTool,
  childContext,
  createPermissionContext,
  emptyRules,
  type PermissionRules,
} from '../../src/policy/permission-context.js';

function rules(partial: Partial<PermissionRules>): PermissionRules {
  return { ...emptyRules(), ...partial };
}

describe('permission context: tools', () => {
  it('denies everything with empty rules (default deny)', () => {
    const ctx = createPermissionContext('/proj', emptyRules(), 'policy .ai/config/policy.yaml');
    expect(checkTool(ctx, 'read_file')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: tool `read_file` is not in `tools`',
    });
    expect(checkMcpTool(ctx, 'files.read')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: MCP tool `files.read` is not in `mcp.tools`',
    });
  });

  it('allows exact ids and globs, and "*" only when written', () => {
    const ctx = createPermissionContext('/proj', rules({ tools: ['read_file', 'demo.*'] }), 'policy p');
    expect(checkTool(ctx, 'read_file')).toEqual({ allowed: true });
    expect(checkTool(ctx, 'demo.echo')).toEqual({ allowed: true });
    expect(checkTool(ctx, 'rm_rf')).toEqual({ allowed: false, reason: 'denied by policy p: tool `rm_rf` is not in `tools`' });
    const all = createPermissionContext('/proj', rules({ tools: ['*'] }), 'policy p');
    expect(checkTool(all, 'anything.at_all')).toEqual({ allowed: true });
  });

  it('denies empty ids and ids with control characters', () => {
    const ctx = createPermissionContext('/proj', rules({ tools: ['*'], mcpTools: ['*'] }), 'policy p');
    expect(checkTool(ctx, '')).toEqual({ allowed: false, reason: 'denied by policy p: tool id is empty' });
    expect(checkTool(ctx, 'a\0b')).toMatchObject({ allowed: false, reason: expect.stringContaining('contains control characters') });
    expect(checkMcpTool(ctx, 'unqualified')).toMatchObject({ allowed: false, reason: expect.stringContaining('name it as `server.tool`') });
  });

  it('matches MCP tools as server.tool globs', () => {
    const ctx = createPermissionContext('/proj', rules({ mcpTools: ['files.*', 'web.fetch'] }), 'policy p');
    expect(checkMcpTool(ctx, 'files.read_file')).toEqual({ allowed: true });
    expect(checkMcpTool(ctx, 'web.fetch')).toEqual({ allowed: true });
    expect(checkMcpTool(ctx, 'web.post')).toMatchObject({ allowed: false, reason: 'denied by policy p: MCP tool `web.post` is not in `mcp.tools`' });
  });
});

describe('permission context: intersection', () => {
  const parent = createPermissionContext('/proj', rules({ tools: ['read_file', 'git_status'], mcpTools: ['files.*'] }), 'policy .ai/config/policy.yaml');

  it('a child cannot widen: a tool the parent lacks is denied, and the parent is named', () => {
    const child = childContext(parent, rules({ tools: ['*'] }), 'directive foo');
    expect(checkTool(child, 'rm_rf')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: tool `rm_rf` is not in `tools`',
    });
    expect(checkTool(child, 'read_file')).toEqual({ allowed: true });
  });

  it('a child narrows: a tool the parent allows but the child lacks is denied by the child', () => {
    const child = childContext(parent, rules({ tools: ['git_status'] }), 'directive foo');
    expect(checkTool(child, 'read_file')).toEqual({ allowed: false, reason: 'denied by directive foo: tool `read_file` is not in `tools`' });
    expect(checkTool(child, 'git_status')).toEqual({ allowed: true });
  });

  it('applies every ancestor, not just the parent', () => {
    const mid = childContext(parent, rules({ tools: ['*'], mcpTools: ['*'] }), 'directive mid');
    const leaf = childContext(mid, rules({ tools: ['*'], mcpTools: ['*'] }), 'hook leaf');
    expect(checkTool(leaf, 'rm_rf')).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy /u) });
    expect(checkMcpTool(leaf, 'web.fetch')).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy /u) });
    expect(checkMcpTool(leaf, 'files.read')).toEqual({ allowed: true });
    expect(leaf.root).toBe(parent.root);
  });
});

describe('permission context: construction', () => {
  it('copies and freezes rules so later edits change nothing', () => {
    const r = rules({ tools: ['read_file'] });
    const ctx = createPermissionContext('/proj', r, 'policy p');
    r.tools.push('rm_rf');
    expect(checkTool(ctx, 'rm_rf').allowed).toBe(false);
    expect(Object.isFrozen(ctx.rules.tools)).toBe(true);
  });

  it('rejects a relative root, an empty label and a bad deny regex', () => {
    const expectThrow = (fn: () => unknown, code: string, text: string) => {
      try {
        fn();
        expect.unreachable();
      } catch (error) {
        expect(isKiwiError(error)).toBe(true);
        expect((error as { code: string }).code).toBe(code);
        expect((error as Error).message).toContain(text);
      }
    };
    expectThrow(() => createPermissionContext('proj', emptyRules(), 'policy p'), 'INVALID_INPUT', 'is not an absolute path');
    expectThrow(() => createPermissionContext('/proj', emptyRules(), ' '), 'INVALID_INPUT', 'needs a label');
    expectThrow(
      () => createPermissionContext('/proj', rules({ commands: [{ executable: 'git', denyArgs: ['(['] }] }), 'policy p'),
      'INVALID_POLICY',
      'commands[0].denyArgs[0] "([" is not a valid regular expression',
    );
    expectThrow(
      () => createPermissionContext('/proj', rules({ rateLimits: { perTool: { '*': { max: 0, perMs: 10 } } } }), 'policy p'),
      'INVALID_POLICY',
      'needs whole numbers max >= 1',
    );
  });
});
