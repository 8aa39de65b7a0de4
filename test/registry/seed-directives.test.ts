import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { directiveContext } from '../../src/policy/directive-permissions.js';
import { checkMcpTool, checkTool, createPermissionContext, emptyRules } from '../../src/policy/permission-context.js';
import { parseDirective } from '../../src/registry/directive-parser.js';

/** Byte-for-byte copies of compat/seed-formats (Kiwi's own example files). */
const SEEDS = path.resolve(import.meta.dirname, '../fixtures/seed-formats');

describe("Kiwi's seed directive deploy_staging.md", () => {
  const text = readFileSync(path.join(SEEDS, 'deploy_staging.md'), 'utf8');
  const label = { file: '/p/.ai/directives/deploy_staging.md', display: '.ai/directives/deploy_staging.md' };

  it('loads unchanged with everything intact', () => {
    const result = parseDirective(text, label, 'project');
    if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
    expect(result.value).toMatchObject({
      name: 'deploy_staging',
      version: '1.0.0',
      description: 'Deploy to staging environment',
      category: 'deployment',
      modelTier: 'balanced',
      limits: { turns: 20, tokens: 50000, spawns: 3, duration: 600, spend: 5 },
      permissions: [
        { kind: 'read', resource: 'filesystem', path: 'src/**' },
        { kind: 'write', resource: 'filesystem', path: 'dist/**' },
        { kind: 'execute', resource: 'tool', id: 'bash' },
      ],
      inputs: [],
    });
    expect(result.value.hooks?.map((h) => [h.when, h.action])).toEqual([
      ['event.code == "permission_denied"', { kind: 'directive', name: 'request_elevated_permissions', inputs: { original_directive: '${directive.name}', missing_cap: '${event.detail.missing}' } }],
      ['cost.turns > limits.turns * 0.9', { kind: 'directive', name: 'warn_approaching_limit', inputs: {} }],
      ['event.name == "error" and event.code == "timeout"', { kind: 'directive', name: 'handle_timeout', inputs: {} }],
    ]);
  });

  it('runs with what its tags grant under the policy, and nothing more', () => {
    const result = parseDirective(text, label, 'project');
    if (!result.ok) throw new Error('expected deploy_staging.md to load');
    const policy = createPermissionContext('/p', { ...emptyRules(), tools: ['*'], mcpTools: ['*'] }, 'policy p');
    const { context, ignored } = directiveContext(policy, 'deploy_staging', result.value.permissions);
    expect(ignored).toEqual([]);
    expect(context.rules).toMatchObject({ tools: ['bash'], fsRead: ['src/**'], fsWrite: ['dist/**'], mcpTools: [], commands: [] });
    expect(checkTool(context, 'bash')).toEqual({ allowed: true });
    expect(checkTool(context, 'python')).toMatchObject({ allowed: false });
    expect(checkMcpTool(context, 'files.read_file')).toMatchObject({ allowed: false });
  });
});
