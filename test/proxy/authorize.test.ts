import { describe, expect, it } from 'vitest';
import { isKiwiError, KiwiError } from '../../src/base/errors.js';
import { createPermissionContext, emptyRules } from '../../src/policy/permission-context.js';
import type { Planned } from '../../src/proxy/authorization.js';
import { authorize } from '../../src/proxy/authorize.js';
import type { ToolCall } from '../../src/proxy/tool-call.js';

/**
 * The plan stage runs before authorize and may stop early (bad arguments, a path outside the
 * project); authorize still refuses in the order a caller always met the checks: the grant first.
 */
const call: ToolCall = { target: { tool: 'echo', args: { text: 42 } }, caller: { session: 's1', client: 'alice', source: 'cli' } };
const badArgs: Planned = { grant: { by: 'tools', id: 'echo' }, stopped: { before: 'checks', error: new KiwiError('INVALID_INPUT', 'argument `text` must be a string') } };
const context = (tools: string[]) => createPermissionContext('/p', { ...emptyRules(), tools }, 'policy');

describe('authorize, after the plan stage', () => {
  it('refuses a call the policy does not grant as not granted, whatever is wrong with its arguments', () => {
    const verdict = authorize(call, badArgs, context([]));
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed ? '' : verdict.reason).toBe('denied by policy: tool `echo` is not in `tools`');
  });

  it('reports the malformed arguments of a granted call as the error they are', () => {
    let thrown: unknown;
    try {
      authorize(call, badArgs, context(['echo']));
    } catch (error) {
      thrown = error;
    }
    expect(isKiwiError(thrown, 'INVALID_INPUT')).toBe(true);
    expect((thrown as Error).message).toBe('argument `text` must be a string');
  });

  it('refuses a planning stop that comes before the grant (an unknown tool) with its own reason', () => {
    const verdict = authorize(call, { stopped: { before: 'grant', reason: 'no tool `echo` in the registry' } }, context(['echo']));
    expect(verdict).toEqual({ allowed: false, reason: 'no tool `echo` in the registry' });
  });
});
