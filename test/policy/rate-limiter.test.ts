import { describe, expect, it } from 'vitest';
import { childContext, createPermissionContext, emptyRules, type PermissionRules } from '../../src/policy/permission-context.js';
import { createRateLimiter } from '../../src/policy/rate-limiter.js';
import { createMemoryTokenBuckets } from '../../src/policy/token-buckets.js';

function ctxWith(rateLimits: PermissionRules['rateLimits'], label = 'policy .ai/config/policy.yaml') {
  return createPermissionContext('/proj', { ...emptyRules(), tools: ['*'], rateLimits }, label);
}

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe('createRateLimiter', () => {
  it('allows a burst of max, then denies with a retry hint, then refills with time', async () => {
    const c = clock();
    const limiter = createRateLimiter({ now: c.now });
    const ctx = ctxWith({ perTool: { read_file: { max: 2, perMs: 1000 } } });
    expect(await limiter.take(ctx, 'read_file', 's1')).toEqual({ allowed: true });
    expect(await limiter.take(ctx, 'read_file', 's1')).toEqual({ allowed: true });
    expect(await limiter.take(ctx, 'read_file', 's1')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: rate limit for tool `read_file` (2 per 1000 ms) is used up; retry in 500 ms',
    });
    c.advance(499);
    expect((await limiter.take(ctx, 'read_file', 's1')).allowed).toBe(false);
    c.advance(1);
    expect(await limiter.take(ctx, 'read_file', 's1')).toEqual({ allowed: true });
    expect((await limiter.take(ctx, 'read_file', 's1')).allowed).toBe(false);
    c.advance(10_000);
    // Refill stops at max: a long pause buys a burst of 2, not 20.
    expect((await limiter.take(ctx, 'read_file', 's1')).allowed).toBe(true);
    expect((await limiter.take(ctx, 'read_file', 's1')).allowed).toBe(true);
    expect((await limiter.take(ctx, 'read_file', 's1')).allowed).toBe(false);
  });

  it('refills exactly for rates that are not whole tokens per ms', async () => {
    const c = clock();
    const limiter = createRateLimiter({ now: c.now });
    const ctx = ctxWith({ perTool: { '*': { max: 60, perMs: 60_000 } } });
    for (let i = 0; i < 60; i++) expect((await limiter.take(ctx, 'x', 's')).allowed).toBe(true);
    expect(await limiter.take(ctx, 'x', 's')).toMatchObject({ allowed: false, reason: expect.stringContaining('retry in 1000 ms') });
    c.advance(1000);
    expect((await limiter.take(ctx, 'x', 's')).allowed).toBe(true);
  });

  it('uses the first matching per-tool key; buckets are per tool and per client', async () => {
    const c = clock();
    const limiter = createRateLimiter({ now: c.now });
    const ctx = ctxWith({ perTool: { 'demo.*': { max: 1, perMs: 1000 }, '*': { max: 3, perMs: 1000 } } });
    expect((await limiter.take(ctx, 'demo.echo', 's1')).allowed).toBe(true);
    expect(await limiter.take(ctx, 'demo.echo', 's1')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: rate limit for tool `demo.echo` (1 per 1000 ms, key `demo.*`) is used up; retry in 1000 ms',
    });
    expect((await limiter.take(ctx, 'demo.other', 's1')).allowed).toBe(true);
    expect((await limiter.take(ctx, 'demo.echo', 's2')).allowed).toBe(true);
    for (let i = 0; i < 3; i++) expect((await limiter.take(ctx, 'read_file', 's1')).allowed).toBe(true);
    expect((await limiter.take(ctx, 'read_file', 's1')).allowed).toBe(false);
  });

  it('limits a client across tools, and a denied call costs no tokens', async () => {
    const c = clock();
    const limiter = createRateLimiter({ now: c.now });
    const ctx = ctxWith({ perTool: { a: { max: 1, perMs: 1000 } }, perClient: { max: 2, perMs: 1000 } });
    expect((await limiter.take(ctx, 'a', 's')).allowed).toBe(true);
    expect((await limiter.take(ctx, 'a', 's')).allowed).toBe(false);
    expect((await limiter.take(ctx, 'b', 's')).allowed).toBe(true);
    expect(await limiter.take(ctx, 'c', 's')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: rate limit for client `s` (2 per 1000 ms) is used up; retry in 500 ms',
    });
    expect((await limiter.take(ctx, 'c', 'other-client')).allowed).toBe(true);
  });

  it('applies every ancestor’s limits', async () => {
    const c = clock();
    const limiter = createRateLimiter({ now: c.now });
    const parent = ctxWith({ perTool: {}, perClient: { max: 2, perMs: 1000 } });
    const child = childContext(parent, { ...emptyRules(), tools: ['*'], rateLimits: { perTool: { '*': { max: 10, perMs: 1000 } } } }, 'directive foo');
    expect((await limiter.take(child, 'x', 's')).allowed).toBe(true);
    expect((await limiter.take(child, 'x', 's')).allowed).toBe(true);
    expect(await limiter.take(child, 'x', 's')).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy .*rate limit for client/u) });
    const strictChild = childContext(parent, { ...emptyRules(), rateLimits: { perTool: { x: { max: 1, perMs: 1000 } } } }, 'directive bar');
    c.advance(1000);
    expect((await limiter.take(strictChild, 'x', 's2')).allowed).toBe(true);
    expect(await limiter.take(strictChild, 'x', 's2')).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by directive bar: /u) });
  });

  it('allows everything when no limits are set', async () => {
    const buckets = createMemoryTokenBuckets();
    const limiter = createRateLimiter({ buckets });
    const ctx = ctxWith({ perTool: {} });
    for (let i = 0; i < 100; i++) expect((await limiter.take(ctx, 'x', 's')).allowed).toBe(true);
    expect(buckets.size()).toBe(0);
  });

  it('keeps at most maxKeys buckets, dropping the least recently used', async () => {
    const c = clock();
    const buckets = createMemoryTokenBuckets({ now: c.now, maxKeys: 3 });
    const limiter = createRateLimiter({ buckets });
    const ctx = ctxWith({ perTool: { '*': { max: 1, perMs: 60_000 } } });
    expect((await limiter.take(ctx, 'x', 's1')).allowed).toBe(true);
    for (const s of ['s2', 's3', 's4', 's5']) await limiter.take(ctx, 'x', s);
    expect(buckets.size()).toBe(3);
    // s1's bucket was dropped, so it starts full again; s5's is still held and empty.
    expect((await limiter.take(ctx, 'x', 's1')).allowed).toBe(true);
    expect((await limiter.take(ctx, 'x', 's5')).allowed).toBe(false);
  });

  it('treats a clock that goes backwards as no time passing', async () => {
    const c = clock();
    const limiter = createRateLimiter({ now: c.now });
    const ctx = ctxWith({ perTool: { '*': { max: 1, perMs: 1000 } } });
    expect((await limiter.take(ctx, 'x', 's')).allowed).toBe(true);
    c.advance(-5000);
    expect((await limiter.take(ctx, 'x', 's')).allowed).toBe(false);
    c.advance(5000 + 1000);
    expect((await limiter.take(ctx, 'x', 's')).allowed).toBe(true);
  });

  it('denies a call without a tool id', async () => {
    const limiter = createRateLimiter();
    expect(await limiter.take(ctxWith({ perTool: {} }), '', 's')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: rate limit check needs a tool id',
    });
  });
});

describe('createRateLimiter: rebuilt contexts', () => {
  it('keeps a child’s buckets when the same child is rebuilt for each call', async () => {
    const c = clock();
    const limiter = createRateLimiter({ now: c.now });
    const parent = ctxWith({ perTool: {} });
    const rebuild = () => childContext(parent, { ...emptyRules(), rateLimits: { perTool: { '*': { max: 1, perMs: 1000 } } } }, 'directive foo');
    expect((await limiter.take(rebuild(), 'x', 's')).allowed).toBe(true);
    expect(await limiter.take(rebuild(), 'x', 's')).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by directive foo: /u) });
  });
});

describe('createRateLimiter: places', () => {
  it('names a context by its root relative to the project, so two folders of one project share buckets', async () => {
    const buckets = createMemoryTokenBuckets();
    const limits = { perTool: {}, perClient: { max: 1, perMs: 60_000 } };
    const a = createRateLimiter({ buckets, root: '/srv/a' });
    const b = createRateLimiter({ buckets, root: '/srv/b' });
    const at = (root: string) => createPermissionContext(root, { ...emptyRules(), tools: ['*'], rateLimits: limits }, 'policy .ai/config/policy.yaml');
    expect((await a.take(at('/srv/a'), 'x', 's')).allowed).toBe(true);
    expect((await b.take(at('/srv/b'), 'x', 's')).allowed).toBe(false);
    // A context rooted elsewhere within the project is another place.
    expect((await b.take(at('/srv/b/sub'), 'x', 's')).allowed).toBe(true);
  });
});
