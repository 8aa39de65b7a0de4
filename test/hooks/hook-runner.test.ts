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

  it('denies, asks for approval and annotates; only the first hook that matches acts', () => {
    const rm = runHooks(loaded, event({ event: { name: 'before_call' }, tool: { id: 'bash' }, arguments: { command: 'rm -rf dist' } }));
    expect(rm.deny).toBe('no recursive deletes on staging (hook at .ai/directives/deploy_staging.md:23)');
    // The approval hook below matches too, but the denial came first.
    expect(rm.approval).toBeUndefined();
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

  it('a fallthrough hook lets the hooks after it act too', () => {
    const parsed = parseDirective(DIRECTIVE.replace('<hook><when>event.name == "before_call" and tool.id == "bash" and', '<hook fallthrough="true"><when>event.name == "before_call" and tool.id == "bash" and'), { file: '/p/d.md', display: 'd.md' }, 'project');
    if (!parsed.ok) throw new Error(parsed.issues.map((i) => i.message).join('\n'));
    const verdict = runHooks(loadDirectiveHooks('d.md', parsed.value.hooks ?? []), event({ event: { name: 'before_call' }, tool: { id: 'bash' }, arguments: { command: 'rm -rf dist' } }));
    expect(verdict.deny).toBe('no recursive deletes on staging (hook at d.md:23)');
    expect(verdict.approval).toBe('a hook asks a person to approve it (d.md:24)');
  });

  it('a hook whose condition fails is the match: later hooks do not act', () => {
    const both = loadDirectiveHooks('p.yaml', [
      { when: 'arguments.missing == "x"', line: 1, action: { kind: 'annotate', text: 'never' } },
      { when: 'true', line: 2, action: { kind: 'annotate', text: 'later' } },
    ]);
    const verdict = runHooks(both, event({ event: { name: 'after_call' } }));
    expect(verdict.annotations).toEqual([]);
    expect(verdict.failures).toEqual([expect.stringMatching(/^hook at p\.yaml:1 failed/)]);
  });
});

describe('steering hooks', () => {
  const steering = loadDirectiveHooks('p.yaml', [
    { when: 'event.name == "error"', line: 1, action: { kind: 'steer', decision: 'retry', max: 2 } },
    { when: 'event.name == "before_call" and tool.id == "slow"', line: 2, action: { kind: 'directive', name: 'judge', inputs: { tool: '${tool.id}' }, steer: { timeoutMs: 5000, retries: 1 } } },
    { when: 'event.name == "before_call"', line: 3, action: { kind: 'steer', decision: 'skip', reason: 'not today' } },
  ]);

  it('a decision of its own comes back with the hook that made it', () => {
    expect(runHooks(steering, event({ event: { name: 'error', code: 'timeout' } })).steer).toEqual({ kind: 'decision', hook: 'p.yaml:1', decision: 'retry', max: 2 });
    expect(runHooks(steering, event({ event: { name: 'before_call' } })).steer).toEqual({ kind: 'decision', hook: 'p.yaml:3', decision: 'skip', reason: 'not today' });
    expect(runHooks(steering, event({ event: { name: 'after_call' } })).steer).toBeUndefined();
  });

  it('a steering directive comes back to be run and waited for, its inputs filled, and is not among the background directives', () => {
    const verdict = runHooks(steering, event({ event: { name: 'before_call' }, tool: { id: 'slow' } }));
    expect(verdict.steer).toEqual({ kind: 'directive', hook: 'p.yaml:2', name: 'judge', inputs: { tool: 'slow' }, timeoutMs: 5000, retries: 1 });
    expect(verdict.directives).toEqual([]);
  });
});
