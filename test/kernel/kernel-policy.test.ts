import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { createRuleRateLimiter, evaluatePolicy, NO_POLICY, toolIdMatcher, type PolicyInput } from '../../src/kernel/kernel-policy.js';
import { compileKernelPolicy, goDurationMs, loadKernelPolicy } from '../../src/kernel/kernel-policy-file.js';
import { parseSchedule } from '../../src/kernel/schedule.js';

/** Rebuno's policy (V0-API.md §15) as the kernel reads and applies it. */

const base: PolicyInput = { toolId: 't', agentId: 'a', labels: {}, arguments: {}, stepCount: 0, durationMs: 0, at: new Date('2026-11-23T10:00:00Z') };
const policy = (rules: unknown[], extra: Record<string, unknown> = {}) => compileKernelPolicy({ rules, ...extra }, 'policy.yaml');
const allowWhen = (when: Record<string, unknown>) => policy([{ id: 'r', priority: 1, when, then: { decision: 'allow' } }]);
const allowed = (when: Record<string, unknown>, input: Partial<PolicyInput>) => evaluatePolicy(allowWhen(when), { ...base, ...input }).decision === 'allow';

describe('tool id globs (Go path.Match)', () => {
  it.each([
    ['web_*', 'web_search_deep', true],
    ['fs_*', 'fs.read_file', false],
    ['fs.*', 'fs.read_file', true],
    ['read_?ile', 'read_file', true],
    ['read_[fp]ile', 'read_pile', true],
    ['read_[^f]ile', 'read_file', false],
    ['a*', 'a/b', false],
    ['a\\*', 'a*', true],
    ['a\\*', 'ab', false],
    ['[unclosed', '[unclosed', true],
    ['exact', 'exactly', false],
  ])('%s against %s: %s', (pattern, id, expected) => {
    expect(toolIdMatcher(pattern)(id)).toBe(expected);
  });
});

describe('conditions', () => {
  it('matches agents, labels (a missing one is ""), step counts, durations and the action', () => {
    expect(allowed({ agent_ids: ['x', 'a'] }, {})).toBe(true);
    expect(allowed({ agent_id: 'x' }, {})).toBe(false);
    expect(allowed({ labels: { env: 'prod' } }, { labels: { env: 'prod', team: 'x' } })).toBe(true);
    expect(allowed({ labels: { env: '' } }, {})).toBe(true);
    expect(allowed({ labels: { env: 'prod' } }, {})).toBe(false);
    expect(allowed({ min_step_count: 2 }, { stepCount: 1 })).toBe(false);
    expect(allowed({ min_step_count: 2 }, { stepCount: 2 })).toBe(true);
    expect(allowed({ min_duration_ms: 1000 }, { durationMs: 999 })).toBe(false);
    expect(allowed({ action: 'tool.invoke' }, {})).toBe(true);
    expect(allowed({ action: 'execution.create' }, {})).toBe(false);
  });

  it('checks top-level arguments with pattern, one_of, min, max, max_length and required', () => {
    const when = (p: Record<string, unknown>) => ({ arguments: [{ field: 'v', ...p }] });
    expect(allowed(when({ pattern: '^ls' }), { arguments: { v: 'ls -la' } })).toBe(true);
    expect(allowed(when({ pattern: 'la' }), { arguments: { v: 'ls -la' } })).toBe(true); // unanchored
    expect(allowed(when({ pattern: '^ls' }), { arguments: { v: 7 } })).toBe(false);
    expect(allowed(when({ one_of: ['a', 'b'] }), { arguments: { v: 'b' } })).toBe(true);
    expect(allowed(when({ min: 1, max: 30 }), { arguments: { v: 30 } })).toBe(true);
    expect(allowed(when({ max: 30 }), { arguments: { v: 31 } })).toBe(false);
    expect(allowed(when({ max: 30 }), { arguments: { v: '3' } })).toBe(false);
    expect(allowed(when({ max_length: 2 }), { arguments: { v: '👋👋' } })).toBe(true);
    expect(allowed(when({ max_length: 1 }), { arguments: { v: '👋👋' } })).toBe(false);
    expect(allowed(when({ max: 30 }), { arguments: {} })).toBe(true); // missing, not required
    expect(allowed(when({ required: true }), { arguments: {} })).toBe(false);
    expect(allowed(when({ required: true }), { arguments: { v: '' } })).toBe(false);
    expect(allowed(when({ max: 30 }), { arguments: null })).toBe(true); // null counts as {}
    expect(allowed(when({ max: 30 }), { arguments: [1] })).toBe(false);
    expect(allowed(when({ max: 30 }), { arguments: 'x' })).toBe(false);
  });

  it('reads schedules in their zone, overnight ranges included', () => {
    const office = parseSchedule('Mon-Fri 09:00-17:00 UTC') as (at: Date) => boolean;
    expect(office(new Date('2026-11-23T09:00:00Z'))).toBe(true); // a Monday, start inclusive
    expect(office(new Date('2026-11-23T17:00:00Z'))).toBe(false); // end exclusive
    expect(office(new Date('2026-11-22T10:00:00Z'))).toBe(false); // a Sunday
    const paris = parseSchedule('Mon 09:00-10:00 Europe/Paris') as (at: Date) => boolean;
    expect(paris(new Date('2026-11-23T08:30:00Z'))).toBe(true);
    const night = parseSchedule('Fri-Mon 22:00-06:00 UTC') as (at: Date) => boolean;
    expect(night(new Date('2026-11-23T05:59:00Z'))).toBe(true);
    expect(night(new Date('2026-11-23T12:00:00Z'))).toBe(false);
    expect((parseSchedule('Mon,Wed 10:00-10:00 UTC') as (at: Date) => boolean)(new Date('2026-11-23T10:00:00Z'))).toBe(false);
    expect(parseSchedule('mon 09:00-10:00 UTC')).toMatch(/days are Sun, Mon/);
    expect(parseSchedule('Mon 9:00-10:00 UTC')).toMatch(/not a time range/);
    expect(parseSchedule('Mon 09:00-10:00 Mars/Olympus')).toMatch(/not a time zone/);
    expect(parseSchedule('Mon 09:00-10:00')).toMatch(/is not "<days> <HH:MM>-<HH:MM> <zone>"/);
  });
});

describe('evaluation', () => {
  it('lets the lowest priority that matches decide, and falls back to the default', () => {
    const p = policy(
      [
        { id: 'late', priority: 40, when: { tool_id: 'x' }, then: { decision: 'deny', reason: 'no' } },
        { id: 'early', priority: 10, when: { tool_id: 'x' }, then: { decision: 'allow', timeout_ms: 1000 } },
      ],
      { default: { decision: 'require_approval', reason: 'ask' } },
    );
    expect(evaluatePolicy(p, { ...base, toolId: 'x' })).toMatchObject({ decision: 'allow', ruleId: 'early', timeoutMs: 1000 });
    expect(evaluatePolicy(p, { ...base, toolId: 'y' })).toEqual({ decision: 'require_approval', reason: 'ask', ruleId: 'default' });
    expect(evaluatePolicy(policy([]), base)).toEqual({ decision: 'deny', reason: 'No explicit allow rule matched', ruleId: 'default' });
    expect(evaluatePolicy(NO_POLICY, base)).toMatchObject({ decision: 'deny', ruleId: 'secure-default' });
  });

  it('counts a rule limit over a sliding window, refusals not counted', () => {
    const limiter = createRuleRateLimiter();
    const limit = { max: 2, windowMs: 1000, window: '1s' };
    expect([0, 10, 20].map((t) => limiter.admit('k', limit, t))).toEqual([true, true, false]);
    expect(limiter.admit('other', limit, 20)).toBe(true);
    expect(limiter.admit('k', limit, 1001)).toBe(true); // the call at 0 left the window
    expect(limiter.admit('k', limit, 1002)).toBe(false);
  });

  it('reads Go durations', () => {
    expect([goDurationMs('500ms'), goDurationMs('30s'), goDurationMs('1m'), goDurationMs('1h30m'), goDurationMs('1.5s')]).toEqual([500, 30_000, 60_000, 5_400_000, 1500]);
    expect([goDurationMs('1d'), goDurationMs(''), goDurationMs('10')]).toEqual([undefined, undefined, undefined]);
  });
});

describe('loading', () => {
  const refused = (data: unknown): string => {
    try {
      compileKernelPolicy(data, 'policy.yaml');
    } catch (error) {
      if (isKiwiError(error, 'INVALID_POLICY')) return error.message;
      throw error;
    }
    throw new Error('loaded');
  };
  const r = (extra: Record<string, unknown>) => ({ id: 'a', priority: 1, then: { decision: 'allow' }, ...extra });

  it.each([
    ['an empty id', { rules: [r({ id: '' })] }, /rules\[0\]\.id: needs an id/],
    ['a duplicate id', { rules: [r({}), r({ priority: 2 })] }, /another rule is already named "a"/],
    ['a duplicate priority', { rules: [r({}), r({ id: 'b' })] }, /priority 1 is also rule a's/],
    ['a bad decision', { rules: [r({ then: { decision: 'maybe' } })] }, /decision: must be allow, deny or require_approval/],
    ['a bad default decision', { default: { decision: 'maybe' } }, /default\.decision/],
    ['a predicate without a field', { rules: [r({ when: { arguments: [{ max: 1 }] } })] }, /field/],
    ['a predicate without a constraint', { rules: [r({ when: { arguments: [{ field: 'x' }] } })] }, /has no constraint/],
    ['a pattern RE2 cannot compile', { rules: [r({ when: { arguments: [{ field: 'x', pattern: '(?=a)' }] } })] }, /RE2 cannot compile/],
    ['a negative min_step_count', { rules: [r({ when: { min_step_count: -1 } })] }, /min_step_count: must be 0 or more/],
    ['a zero min_duration_ms', { rules: [r({ when: { min_duration_ms: 0 } })] }, /min_duration_ms: must be more than 0/],
    ['a bad schedule', { rules: [r({ when: { schedule: 'weekdays' } })] }, /when\.schedule/],
    ['a zero rate limit', { rules: [r({ rate_limit: { max: 0, window: '1m' } })] }, /rate_limit\.max: must be more than 0/],
    ['a bad window', { rules: [r({ rate_limit: { max: 1, window: '1 minute' } })] }, /rate_limit\.window "1 minute" is not a duration/],
  ])('refuses %s', (_name, data, message) => {
    expect(refused(data)).toMatch(message);
  });

  it('names an unclosed "[" of the file at its own line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kiwi-kernel-policy-'));
    const file = join(dir, 'kernel-policy.yaml');
    await writeFile(file, 'rules:\n  - id: a\n    priority: 1\n    when: { tool_ids: [deploy_*, git_push }\n    then: { decision: deny }\n');
    await expect(loadKernelPolicy(file)).rejects.toThrow(`${file}:4:23: invalid YAML: the "[" opened at line 4, column 23 is not closed; end that list with "]"`);
    await rm(dir, { recursive: true });
  });

  it('ignores keys it does not know, as Rebuno does', () => {
    expect(compileKernelPolicy({ rules: [r({ note: 'x', when: { extra: 1 } })], comment: 'hi' }, 'policy.yaml').rules).toHaveLength(1);
  });
});

describe('tool names (issue 22: look-alikes passed a rule written for deploy_prod)', () => {
  const guarded = policy([{ id: 'no-prod', priority: 1, when: { tool_id: 'deploy_prod' }, then: { decision: 'deny', reason: 'not prod' } }], { default: { decision: 'allow' } });
  const verdict = (toolId: string) => evaluatePolicy(guarded, { ...base, toolId });

  it('a rule catches its tool whatever the case, and with - for _', () => {
    for (const id of ['deploy_prod', 'Deploy_prod', 'DEPLOY_PROD', 'deploy-prod', 'Deploy-Prod']) expect(verdict(id), id).toMatchObject({ decision: 'deny', ruleId: 'no-prod' });
    expect(verdict('deploy_staging')).toMatchObject({ decision: 'allow', ruleId: 'default' });
    expect(toolIdMatcher('deploy-*')('DEPLOY_prod')).toBe(true);
    expect(toolIdMatcher('fs.read_[Ff]ile')('FS.READ-FILE')).toBe(true);
    expect(toolIdMatcher('web_\\-x')('web__x')).toBe(true);
  });

  it('refuses a tool id outside [A-Za-z0-9_.-] before any rule, naming the character, even where the default allows', () => {
    expect(verdict('deploy\u200b_prod')).toEqual({ decision: 'deny', ruleId: 'tool-id', reason: expect.stringMatching(/U\+200B ZERO WIDTH SPACE \(an invisible character\) at position 7/) });
    expect(verdict('d\u0435ploy_prod')).toEqual({ decision: 'deny', ruleId: 'tool-id', reason: expect.stringMatching(/U\+0435 CYRILLIC SMALL LETTER IE \(looks like "e"\).*write "deploy_prod"/) });
    expect(verdict('ｄeploy_prod')).toMatchObject({ decision: 'deny', ruleId: 'tool-id' });
    expect(verdict('deploy prod')).toMatchObject({ decision: 'deny', ruleId: 'tool-id' });
    expect(verdict('ns/deploy_prod')).toMatchObject({ decision: 'deny', ruleId: 'tool-id' });
    expect(verdict('')).toMatchObject({ decision: 'deny', ruleId: 'tool-id' });
    expect(evaluatePolicy(allowWhen({}), { ...base, toolId: 'web.search-2' })).toMatchObject({ decision: 'allow' });
  });

  it('refuses at load a rule whose tool id no tool can have', () => {
    expect(() => policy([{ id: 'cyr', priority: 1, when: { tool_ids: ['ok_*', 'd\u0435ploy'] }, then: { decision: 'deny' } }])).toThrow(/rules\[0\]: rule "cyr": when\.tool_id "d\u0435ploy" contains U\+0435, outside the tool id alphabet/);
    expect(policy([{ id: 'glob', priority: 1, when: { tool_id: 'read_[^f]ile\\*' }, then: { decision: 'deny' } }]).rules).toHaveLength(1);
  });
});
