import { describe, expect, it } from 'vitest';
import { childContext, createPermissionContext, emptyRules } from '../../src/policy/permission-context.js';
import { runnerCapabilities } from '../../src/runner/runner-capabilities.js';
import { makeTool, toolMap } from '../helpers/make-tool.js';

/** What a runner offers the kernel: the callable tools its caller's rights let it run, narrowed by --tools. */

const tools = toolMap(
  makeTool({ id: 'subprocess', type: 'primitive', executor: null }),
  makeTool({ id: 'node_runtime', type: 'runtime', executor: 'subprocess' }),
  makeTool({ id: 'git_log', executor: 'subprocess' }),
  makeTool({ id: 'git_push', executor: 'subprocess' }),
  makeTool({ id: 'read_file', executor: 'subprocess' }),
  makeTool({ id: 'orphan', executor: 'missing_runtime' }),
);
const policy = createPermissionContext('/project', { ...emptyRules(), tools: ['git_*', 'read_file', 'orphan', 'subprocess'] }, 'policy .ai/config/policy.yaml');

describe('runner capabilities', () => {
  it('offers the callable tools the policy allows and says why the others are withheld', () => {
    const caps = runnerCapabilities(tools, policy, { client: 'local' });
    expect(caps.offered).toEqual(['git_log', 'git_push', 'read_file']);
    expect(caps.withheld.map((w) => w.tool)).toEqual(['orphan']);
    expect(caps.withheld[0]?.reason).toMatch(/^its chain is broken: /);
  });

  it("applies the caller's own narrower rights, as the tool proxy does", () => {
    const caller = { client: 'ci', context: childContext(policy, { ...emptyRules(), tools: ['git_log', 'read_file'] }, 'client ci') };
    const caps = runnerCapabilities(tools, policy, caller);
    expect(caps.offered).toEqual(['git_log', 'read_file']);
    expect(caps.withheld).toContainEqual({ tool: 'git_push', reason: expect.stringContaining('client ci') });
  });

  it('narrows to --tools globs, and names a glob that matches nothing', () => {
    const caps = runnerCapabilities(tools, policy, { client: 'local' }, ['git_*', 'deploy']);
    expect(caps).toMatchObject({ offered: ['git_log', 'git_push'], allowed: ['git_log', 'git_push', 'read_file'], unmatched: ['deploy'] });
  });
});
