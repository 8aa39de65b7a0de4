import { describe, expect, it } from 'vitest';
import { createConditionCompiler, type ConditionResult, type ConditionSite } from '../../src/hooks/condition.js';
import type { HookEvent } from '../../src/hooks/hook-event.js';
import { isKiwiError } from '../../src/base/errors.js';

/** The three `<when>` conditions of deploy_staging.md (shared/compat/seed-formats), as written there. */
const DEPLOY_STAGING = {
  permissionDenied: 'event.code == "permission_denied"',
  nearTurnLimit: 'cost.turns > limits.turns * 0.9',
  timeout: 'event.name == "error" and event.code == "timeout"',
};
const SITE: ConditionSite = { file: '.ai/directives/deploy_staging.md', line: 24, column: 7 };

function hookEvent(overrides: Partial<HookEvent> = {}): HookEvent {
  return {
    event: { name: 'tool_call', code: 'ok', detail: { missing: 'write:dist/**' } },
    tool: { id: 'bash', type: 'script', mutates_state: true },
    arguments: { command: 'npm', args: ['run', 'build'] },
    client: { id: 'loopback' },
    directive: { name: 'deploy_staging', version: '1.0.0' },
    cost: { turns: 3, tokens: 1200, spend: 0.4 },
    limits: { turns: 20, tokens: 50000, spend: 5 },
    permissions: { read: ['src/**'], write: ['dist/**'], execute: ['bash'] },
    ...overrides,
  };
}

const compiler = createConditionCompiler();
const compile = (source: string, site: ConditionSite = SITE) => compiler.compileCondition(source, site);
const matched = (result: ConditionResult) => (result.ok ? result.matched : `failed: ${result.reason}`);

function compileError(source: string, site: ConditionSite = SITE): string {
  try {
    compile(source, site);
  } catch (error) {
    if (isKiwiError(error, 'INVALID_INPUT')) return error.message;
    throw error;
  }
  throw new Error(`compiled: ${source}`);
}

describe('hook conditions: the deploy_staging.md hooks', () => {
  it('fires on a permission_denied event only', () => {
    const when = compile(DEPLOY_STAGING.permissionDenied);
    expect(matched(when.evaluate(hookEvent({ event: { name: 'error', code: 'permission_denied' } })))).toBe(true);
    expect(matched(when.evaluate(hookEvent()))).toBe(false);
  });

  it('compares an int-valued count with a double product (JSON numbers are doubles)', () => {
    const when = compile(DEPLOY_STAGING.nearTurnLimit);
    expect(matched(when.evaluate(hookEvent({ cost: { turns: 19 } })))).toBe(true);
    expect(matched(when.evaluate(hookEvent({ cost: { turns: 18 } })))).toBe(false);
    expect(matched(when.evaluate(hookEvent({ cost: { turns: 18.5 } })))).toBe(true);
  });

  it('reads Kiwi\'s `and` as CEL\'s &&', () => {
    const when = compile(DEPLOY_STAGING.timeout);
    expect(when.cel).toBe('event.name == "error" && event.code == "timeout"');
    expect(matched(when.evaluate(hookEvent({ event: { name: 'error', code: 'timeout' } })))).toBe(true);
    expect(matched(when.evaluate(hookEvent({ event: { name: 'error', code: 'permission_denied' } })))).toBe(false);
    expect(matched(when.evaluate(hookEvent({ event: { name: 'tool_call', code: 'timeout' } })))).toBe(false);
  });
});

describe('hook conditions: CEL and the Kiwi spelling', () => {
  it('keeps `and`/`or`/`not` inside string literals as text', () => {
    const when = compile("event.detail == 'this and that' or event.detail == \"not or\"");
    expect(when.cel).toBe("event.detail == 'this and that' || event.detail == \"not or\"");
    expect(matched(when.evaluate(hookEvent({ event: { name: 'x', detail: 'this and that' } })))).toBe(true);
    expect(matched(when.evaluate(hookEvent({ event: { name: 'x', detail: 'not or' } })))).toBe(true);
    expect(matched(when.evaluate(hookEvent({ event: { name: 'x', detail: 'this && that' } })))).toBe(false);
  });

  it('keeps identifiers that contain the words', () => {
    const when = compile('tool.android == true and arguments.order == "asc" or not has(arguments.notes)');
    expect(when.cel).toBe('tool.android == true && arguments.order == "asc" || ! has(arguments.notes)');
    expect(matched(when.evaluate(hookEvent({ tool: { android: true }, arguments: { order: 'asc', notes: 'n' } })))).toBe(true);
    expect(matched(when.evaluate(hookEvent({ tool: { android: false }, arguments: { notes: 'n' } })))).toBe(false);
    expect(matched(when.evaluate(hookEvent({ tool: { android: false }, arguments: {} })))).toBe(true);
  });

  it('runs CEL macros, `in` and string functions over the event', () => {
    const when = compile(
      'tool.id in permissions.execute && permissions.read.exists(p, p.startsWith("src")) && arguments.args.all(a, size(a) > 2) && event.detail.missing.contains("dist")',
    );
    expect(matched(when.evaluate(hookEvent()))).toBe(true);
    expect(matched(when.evaluate(hookEvent({ tool: { id: 'curl' } })))).toBe(false);
  });
});

describe('hook conditions: checked when the file loads', () => {
  it('names the file, line and column and what the CEL parser found', () => {
    expect(compileError('event.code ==')).toBe(
      '.ai/directives/deploy_staging.md:24:20: hook condition "event.code ==": Unexpected token: EOF',
    );
    expect(compileError('event.name == "error" and\n  (event.code == "timeout"')).toMatch(
      /^\.ai\/directives\/deploy_staging\.md:25:\d+: hook condition .*: Expected RPAREN, got EOF$/,
    );
  });

  it('maps positions back through the translation', () => {
    // `&&&` is not CEL; the column is the one in the file, before `and` became `&&`.
    expect(compileError('a and b &&& c', { file: 'f.md', line: 3 })).toMatch(/^f\.md:3:11: /);
  });

  it('rejects unknown variables, with a suggestion', () => {
    expect(compileError('evnt.code == "timeout"')).toMatch(/:24:7: hook condition .*Unknown variable: evnt \(did you mean "event"\?\); a condition sees event, tool, arguments/);
  });

  it('rejects unknown functions and operators that no type allows', () => {
    expect(compileError('event.code.nosuch()')).toMatch(/no matching overload/);
    expect(compileError('"abc" + 1 == "abc1"')).toMatch(/no such overload: string \+ int/);
  });

  it('rejects a condition that cannot be true or false', () => {
    expect(compileError('cost.turns + 1.0')).toMatch(/gives a double, not true or false/);
    expect(compileError('"yes"')).toMatch(/gives a string/);
  });

  it('rejects Kiwi `and`/`or` that leave CEL malformed', () => {
    expect(compileError('event.code == "a" and')).toMatch(/:24:\d+: hook condition .*Unexpected token: EOF/);
  });

  it('rejects a `not` whose meaning would change in CEL', () => {
    expect(compileError('not event.code == "timeout"')).toMatch(/:24:7: .*`not` here applies only to the operand before `==`.*write `not \(…\)`/);
    const fine = compile('not (event.code == "timeout")');
    expect(matched(fine.evaluate(hookEvent()))).toBe(true);
    expect(compile('not has(event.detail) or event.code == "a"').cel).toBe('! has(event.detail) || event.code == "a"');
  });

  it('rejects `matches`, whose regular expressions backtrack', () => {
    expect(compileError('event.detail.missing.matches("^(a+)+$")')).toMatch(/`matches` is not available in hook conditions/);
  });

  it('bounds the source, the tree and the comprehension nesting', () => {
    expect(compileError(`event.code == "${'x'.repeat(5000)}"`)).toMatch(/is 5016 bytes, more than the 4096 allowed/);
    expect(compileError(Array.from({ length: 200 }, () => 'cost.a').join(' or '))).toMatch(/Exceeded maxAstNodes \(512\)/);
    expect(compileError(`${'('.repeat(40)}true${')'.repeat(40)}`)).toMatch(/Exceeded maxDepth \(32\)/);
    expect(compileError('permissions.read.exists(a, permissions.read.exists(b, permissions.read.exists(c, a == c)))')).toMatch(
      /comprehensions .* nest 3 deep here; at most 2 may/,
    );
    const two = compile('permissions.read.exists(a, permissions.write.exists(b, a == b))');
    expect(matched(two.evaluate(hookEvent({ permissions: { read: ['x'], write: ['x'] } })))).toBe(true);
    // Chained comprehensions run one after another, so they do not count as nesting.
    expect(compile('permissions.read.map(a, a).filter(b, b != "").map(c, c).exists(d, d == "src/**")').cel).toContain('map');
  });

  it('rejects an empty condition', () => {
    expect(compileError('  ')).toMatch(/is empty/);
  });

  it('takes smaller limits', () => {
    const short = createConditionCompiler({ maxSourceBytes: 16 });
    expect(() => short.compileCondition('event.code == "timeout"', SITE)).toThrow(/more than the 16 allowed/);
    const flat = createConditionCompiler({ maxComprehensionNesting: 1 });
    expect(() => flat.compileCondition('cost.a.all(x, cost.b.all(y, x == y))', SITE)).toThrow(/nest 2 deep/);
    expect(flat.compileCondition('cost.a.all(x, x > 1.0)', SITE).cel).toBe('cost.a.all(x, x > 1.0)');
  });
});

describe('hook conditions: a cost bound on every evaluation', () => {
  // Issue 22: a comprehension in a comprehension over a 4,000-item argument list held /healthz for 6.4 s.
  const nested = 'arguments.items.exists(a, arguments.items.exists(b, a == b + "x"))';
  const items = (n: number) => Array.from({ length: n }, (_, i) => `i${i}`);

  it('refuses, without running it, a nested comprehension over a list too long for the budget, naming the list', () => {
    const result = compile(nested).evaluate(hookEvent({ arguments: { items: items(4000) } }));
    expect(result).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^\.ai\/directives\/deploy_staging\.md:24:7: hook condition .* failed: not evaluated: with comprehensions nested 2 deep over `arguments\.items` \(a list of 4000 items\), it would take about [\d,]+ steps, more than the 1,000,000 a condition may take$/,
      ),
    });
  });

  it('runs it on a list the budget allows, and a single comprehension on a far longer one', () => {
    expect(matched(compile(nested).evaluate(hookEvent({ arguments: { items: items(50) } })))).toBe(false);
    expect(matched(compile(nested).evaluate(hookEvent({ arguments: { items: ['ax', 'a'] } })))).toBe(true);
    expect(matched(compile('arguments.items.exists(a, a == "i9999")').evaluate(hookEvent({ arguments: { items: items(10_000) } })))).toBe(true);
  });

  it('prices only the fields the condition reads, and a map by its entries', () => {
    const perms = compile('permissions.read.exists(a, permissions.read.exists(b, a == b))');
    // A long argument list the condition never reads costs it nothing.
    expect(matched(perms.evaluate(hookEvent({ permissions: { read: ['x'] }, arguments: { items: items(4000) } })))).toBe(true);
    const keys = compile('arguments.m.exists(k, arguments.m.exists(j, k == j + "x"))');
    const big = Object.fromEntries(items(2000).map((k) => [k, 1]));
    expect(keys.evaluate(hookEvent({ arguments: { m: big } }))).toEqual({ ok: false, reason: expect.stringMatching(/over `arguments\.m` \(a map of 2000 entries\)/) });
  });

  it('counts a string as a list when the condition splits it', () => {
    const split = compile('arguments.s.split("").exists(a, arguments.s.split("").exists(b, a == b + "x"))');
    expect(split.evaluate(hookEvent({ arguments: { s: 'y'.repeat(3000) } }))).toEqual({ ok: false, reason: expect.stringMatching(/over `arguments\.s` \(a string of 3001 characters\)/) });
    // Without `split`, a long string is walked natively, once per step: no comprehension ranges over it.
    expect(matched(compile('arguments.items.exists(a, a == arguments.s)').evaluate(hookEvent({ arguments: { items: ['z'], s: 'y'.repeat(3000) } })))).toBe(false);
  });

  it('takes a smaller budget', () => {
    const tight = createConditionCompiler({ maxEvaluationSteps: 100 });
    const when = tight.compileCondition('arguments.items.exists(a, a == "i1")', SITE);
    expect(when.evaluate(hookEvent({ arguments: { items: items(5) } }))).toEqual({ ok: true, matched: true });
    expect(when.evaluate(hookEvent({ arguments: { items: items(50) } }))).toEqual({ ok: false, reason: expect.stringMatching(/with a comprehension over `arguments\.items` \(a list of 50 items\).*more than the 100 a condition may take/) });
  });
});

describe('hook conditions: failing closed at run time', () => {
  it('turns a missing field into a failure with the reason', () => {
    const when = compile('event.detail.missing == "write:dist/**"');
    const result = when.evaluate(hookEvent({ event: { name: 'error' } }));
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/^\.ai\/directives\/deploy_staging\.md:24:\d+: hook condition .* failed: No such key: detail$/) });
  });

  it('turns a wrong type into a failure', () => {
    const when = compile('cost.turns > limits.turns * 0.9');
    const result = when.evaluate(hookEvent({ cost: { turns: 'many' } }));
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.reason).toMatch(/failed: no such overload: dyn<string> > double/);
    // int arithmetic on a JSON number is a double + int in CEL.
    const plusOne = compile('cost.turns + 1 > 2.0').evaluate(hookEvent());
    expect(plusOne.ok ? '' : plusOne.reason).toMatch(/no such overload/);
  });

  it('turns a result that is not a boolean into a failure', () => {
    const when = compile('event.detail');
    expect(when.evaluate(hookEvent({ event: { name: 'x', detail: 'text' } }))).toEqual({ ok: false, reason: expect.stringMatching(/failed: gave a string "text", not true or false$/) });
    expect(when.evaluate(hookEvent({ event: { name: 'x', detail: 3 } }))).toEqual({ ok: false, reason: expect.stringMatching(/gave the double 3/) });
  });

  it('fails when the caller leaves a variable out', () => {
    const when = compile('directive.name == "deploy_staging"');
    const { directive: _left, ...partial } = hookEvent();
    expect(when.evaluate(partial as HookEvent).ok).toBe(false);
  });

  it('reads only own properties of the event', () => {
    const when = compile('has(arguments.constructor) or has(arguments.toString)');
    expect(matched(when.evaluate(hookEvent({ arguments: JSON.parse('{"__proto__": {"constructor": 1}}') as Record<string, unknown> })))).toBe(false);
  });
});
