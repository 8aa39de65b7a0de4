import { describe, expect, it } from 'vitest';
import type { HookEvent } from '../../src/hooks/hook-event.js';
import { loadDirectiveHooks, runHooks } from '../../src/hooks/hook-runner.js';
import { parseDirective } from '../../src/registry/directive-parser.js';

/**
 * A directive's hooks, read by the registry's parser as Kiwi writes them (deploy_staging.md's
 * three, and one of each other action), run on the events of a call.
 */

const DIRECTIVE = `<directive name="deploy_staging" version="1.0.0">
<metadata>
<description>Deploy to staging environment</description>
<limits><turns>20</turns></limits>
<hooks>
<hook>
<when>event.code == "permission_denied"</when>
<directive>request_elevated_permissions</directive>
<inputs>
<original_directive>\${directive.name}</original_directive>
<missing_cap>\${event.detail.missing}</missing_cap>
<not_there>\${event.detail.nothing}</not_there>
</inputs>
</hook>
<hook>
<when>cost.turns > limits.turns * 0.9</when>
<directive>warn_approaching_limit</directive>
</hook>
<hook>
<when>event.name == "error" and event.code == "timeout"</when>
<directive>handle_timeout</directive>
</hook>
<hook><when>event.name == "before_call" and tool.id == "bash" and arguments.command.contains("rm -rf")</when><deny>no recursive deletes on staging</deny></hook>
<hook><when>event.name == "before_call" and tool.id == "bash"</when><require_approval/></hook>
<hook><when>event.name == "after_call" and tool.id == "bash"</when><annotate>bash ran on staging</annotate></hook>
</hooks>
</metadata>
</directive>`;

function hooks() {
  const parsed = parseDirective(DIRECTIVE, { file: '/p/.ai/directives/deploy_staging.md', display: '.ai/directives/deploy_staging.md' }, 'project');
  if (!parsed.ok) throw new Error(parsed.issues.map((i) => i.message).join('\n'));
  return loadDirectiveHooks('.ai/directives/deploy_staging.md', parsed.value.hooks ?? []);
}

function event(parts: Partial<HookEvent> & Pick<HookEvent, 'event'>): HookEvent {
  return { tool: { id: 'read_file' }, arguments: {}, client: { name: 'local' }, directive: { name: 'deploy_staging' }, cost: { turns: 1 }, limits: { turns: 20 }, permissions: {}, ...parts };
}

describe('hooks run on events', () => {
  const loaded = hooks();

  it('runs the directive a matching hook names, its inputs filled from the event (a missing one left as written)', () => {
    const verdict = runHooks(loaded, event({ event: { name: 'denied', code: 'permission_denied', detail: { missing: 'write dist/**' } } }));
    expect(verdict).toEqual({
      failures: [],
      annotations: [],
      directives: [{ name: 'request_elevated_permissions', inputs: { original_directive: 'deploy_staging', missing_cap: 'write dist/**', not_there: '${event.detail.nothing}' } }],
      webhooks: [],
    });
  });

  it("reads Kiwi's and/or and compares counts with the limits", () => {
    expect(runHooks(loaded, event({ event: { name: 'error', code: 'timeout' } })).directives.map((d) => d.name)).toEqual(['handle_timeout']);
    expect(runHooks(loaded, event({ event: { name: 'error', code: 'crash' } })).directives).toEqual([]);
    expect(runHooks(loaded, event({ event: { name: 'turn' }, cost: { turns: 19 } })).directives.map((d) => d.name)).toEqual(['warn_approaching_limit']);
    expect(runHooks(loaded, event({ event: { name: 'turn' }, cost: { turns: 18 } })).directives).toEqual([]);
  });

  it('denies, asks for approval and annotates; the first denial is the one given', () => {
    const rm = runHooks(loaded, event({ event: { name: 'before_call' }, tool: { id: 'bash' }, arguments: { command: 'rm -rf dist' } }));
    expect(rm.deny).toBe('no recursive deletes on staging (hook at .ai/directives/deploy_staging.md:23)');
    expect(rm.approval).toBe('a hook asks a person to approve it (.ai/directives/deploy_staging.md:24)');
    const ls = runHooks(loaded, event({ event: { name: 'before_call' }, tool: { id: 'bash' }, arguments: { command: 'ls' } }));
    expect(ls.deny).toBeUndefined();
    expect(ls.approval).toBeDefined();
    expect(runHooks(loaded, event({ event: { name: 'after_call' }, tool: { id: 'bash' } })).annotations).toEqual(['bash ran on staging']);
    expect(runHooks(loaded, event({ event: { name: 'before_call' } }))).toEqual({ failures: [], annotations: [], directives: [], webhooks: [] });
  });

  it('fails closed: a condition that cannot be evaluated on the event denies the call, saying which hook and why', () => {
    const verdict = runHooks(loaded, event({ event: { name: 'turn' }, cost: {} }));
    expect(verdict.deny).toMatch(/^hook at \.ai\/directives\/deploy_staging\.md:16 failed, so the call is refused: .*cost\.turns > limits\.turns \* 0\.9/);
  });

  it('fails closed when a filled input would be too long', () => {
    const verdict = runHooks(loaded, event({ event: { name: 'denied', code: 'permission_denied', detail: { missing: 'x'.repeat(40_000) } } }));
    expect(verdict.deny).toMatch(/^hook at \.ai\/directives\/deploy_staging\.md:7 failed, so the call is refused: input missing_cap: the filled input is more than/);
    expect(verdict.directives).toEqual([]);
  });
});
