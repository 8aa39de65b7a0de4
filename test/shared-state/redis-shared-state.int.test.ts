import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { connectRedis, shownRedisUrl, type Redis } from '../../src/shared-state/redis-client.js';
import { watchExecution } from '../../src/contracts/kernel-events-bus.js';
import { createRedisKernelEventsBus } from '../../src/shared-state/kernel-events-bus.js';
import { createRedisMcpSessions } from '../../src/shared-state/mcp-sessions.js';
import { createRedisBudgetHolds } from '../../src/shared-state/redis-budget-holds.js';
import { createRedisLoopDetector } from '../../src/shared-state/redis-loop-detector.js';
import { createRedisRequestSlots } from '../../src/shared-state/redis-request-slots.js';
import { createRedisTokenBuckets } from '../../src/shared-state/redis-token-buckets.js';
import { openSharedState } from '../../src/shared-state/shared-state.js';
import { redisAvailable, startRedis } from '../helpers/redis-server.js';
import { redisForTest } from '../helpers/run-resources.js';

/**
 * The Redis side of shared-state/ against a real redis-server: two connections stand for two
 * replicas. What the in-process versions promise (policy/token-buckets.ts,
 * clients/request-slots.ts) must hold across them.
 */
describe.skipIf(!redisAvailable())('shared state in Redis', () => {
  let server: Awaited<ReturnType<typeof redisForTest>>;
  let a: Redis;
  let b: Redis;
  let n = 0;
  /** A prefix per test, so none sees another's buckets or leases. */
  const prefix = (): string => `${server.prefix}${++n}:`;

  beforeAll(async () => {
    server = await redisForTest();
    [a, b] = await Promise.all([connectRedis(server.url), connectRedis(server.url)]);
  });
  afterAll(async () => {
    await Promise.allSettled([a?.close(), b?.close()]);
    await server?.stop();
  });

  describe('token buckets', () => {
    it('lets a burst of max through across replicas, then refuses with the time until a token', async () => {
      const p = prefix();
      const [one, two] = [createRedisTokenBuckets(a, { url: server.url, prefix: p }), createRedisTokenBuckets(b, { url: server.url, prefix: p })];
      const need = [{ key: 'client alice', max: 3, perMs: 60_000 }];
      expect(await one.take(need)).toEqual({ ok: true });
      expect(await one.take(need)).toEqual({ ok: true });
      expect(await two.take(need)).toEqual({ ok: true });
      const refused = await two.take(need);
      expect(refused).toMatchObject({ ok: false, empty: 0 });
      // One token comes back every 20 s at 3 a minute; a few ms have passed since the last take.
      expect(refused.ok === false && refused.retryMs).toBeGreaterThan(19_000);
      expect(refused.ok === false && refused.retryMs).toBeLessThanOrEqual(20_000);
      expect(await one.take([{ key: 'client bob', max: 3, perMs: 60_000 }])).toEqual({ ok: true });
    });

    it('takes from every bucket or from none', async () => {
      const buckets = createRedisTokenBuckets(a, { url: server.url, prefix: prefix() });
      const tool = { key: 'tool x', max: 1, perMs: 60_000 };
      const client = { key: 'client', max: 5, perMs: 60_000 };
      expect(await buckets.take([client, tool])).toEqual({ ok: true });
      expect(await buckets.take([client, tool])).toMatchObject({ ok: false, empty: 1 });
      // The refused call cost the client bucket nothing: 4 of 5 are left.
      for (let i = 0; i < 4; i++) expect(await buckets.take([client])).toEqual({ ok: true });
      expect(await buckets.take([client])).toMatchObject({ ok: false, empty: 0 });
    });

    it('refills with time, and a bucket expires once it would be full again', async () => {
      const p = prefix();
      const buckets = createRedisTokenBuckets(a, { url: server.url, prefix: p });
      const fast = [{ key: 'fast', max: 2, perMs: 200 }];
      expect(await buckets.take(fast)).toEqual({ ok: true });
      expect(await buckets.take(fast)).toEqual({ ok: true });
      const refused = await buckets.take(fast);
      expect(refused.ok).toBe(false);
      await new Promise((r) => setTimeout(r, refused.ok ? 0 : refused.retryMs + 5));
      expect(await buckets.take(fast)).toEqual({ ok: true });
      const keys = await a.keys(`${p}*`);
      expect(keys).toHaveLength(1);
      const ttl = await a.pTTL(keys[0]!);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(200);
    });

    it('spends the last token once when replicas race for it', async () => {
      const p = prefix();
      const [one, two] = [createRedisTokenBuckets(a, { url: server.url, prefix: p }), createRedisTokenBuckets(b, { url: server.url, prefix: p })];
      const need = [{ key: 'raced', max: 10, perMs: 3_600_000 }];
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? one : two).take(need)));
      expect(results.filter((r) => r.ok)).toHaveLength(10);
    });

    it('loads its script again when Redis has forgotten it (a restart, SCRIPT FLUSH)', async () => {
      const buckets = createRedisTokenBuckets(a, { url: server.url, prefix: prefix() });
      expect(await buckets.take([{ key: 'k', max: 2, perMs: 60_000 }])).toEqual({ ok: true });
      await a.scriptFlush();
      expect(await buckets.take([{ key: 'k', max: 2, perMs: 60_000 }])).toEqual({ ok: true });
      expect((await buckets.take([{ key: 'k', max: 2, perMs: 60_000 }])).ok).toBe(false);
    });
  });

  describe('request slots', () => {
    it('caps a client’s running requests across replicas, and a release frees a slot for any of them', async () => {
      const p = prefix();
      const [one, two] = [createRedisRequestSlots(a, { url: server.url, prefix: p }), createRedisRequestSlots(b, { url: server.url, prefix: p })];
      try {
        const first = await one.acquire('alice', 2);
        const second = await two.acquire('alice', 2);
        expect([first.ok, second.ok]).toEqual([true, true]);
        expect(await one.acquire('alice', 2)).toEqual({ ok: false, running: 2 });
        expect((await two.acquire('bob', 2)).ok).toBe(true);
        expect(one.held()).toEqual({ alice: 1 });
        if (first.ok) first.release();
        if (first.ok) first.release(); // twice: still one slot back, not two
        await expect.poll(async () => (await two.acquire('alice', 2)).ok).toBe(true);
        expect(await one.acquire('alice', 2)).toEqual({ ok: false, running: 2 });
        expect(one.held()).toEqual({});
      } finally {
        one.close();
        two.close();
      }
    });

    it('keeps a running request’s lease alive past its TTL, and gives back the slots of a replica that died', async () => {
      const p = prefix();
      const ttlMs = 300;
      const survivor = createRedisRequestSlots(a, { url: server.url, prefix: p, ttlMs });
      const dying = createRedisRequestSlots(b, { url: server.url, prefix: p, ttlMs });
      try {
        expect((await survivor.acquire('carol', 2)).ok).toBe(true);
        expect((await dying.acquire('carol', 2)).ok).toBe(true);
        dying.close(); // stops renewing without releasing: what a SIGKILL leaves
        await new Promise((r) => setTimeout(r, ttlMs * 3));
        // The dead replica's lease lapsed; the survivor's, renewed, still counts.
        expect((await survivor.acquire('carol', 2)).ok).toBe(true);
        expect(await survivor.acquire('carol', 2)).toEqual({ ok: false, running: 2 });
      } finally {
        survivor.close();
        dying.close();
      }
    });
  });

  describe('loop detector', () => {
    it('counts a client’s identical calls across replicas, apart from other calls and clients', async () => {
      const p = prefix();
      const [one, two] = [createRedisLoopDetector(a, { url: server.url, prefix: p }), createRedisLoopDetector(b, { url: server.url, prefix: p })];
      expect(await one.observe('alice', 'read_file', { path: 'a', n: [1, { y: 2, x: 1 }] })).toEqual({ stuck: false, count: 1 });
      expect(await two.observe('alice', 'read_file', { n: [1, { x: 1, y: 2 }], path: 'a' })).toEqual({ stuck: false, count: 2 });
      expect(await two.observe('alice', 'read_file', { path: 'b' })).toEqual({ stuck: false, count: 1 });
      expect(await two.observe('bob', 'read_file', { path: 'a', n: [1, { x: 1, y: 2 }] })).toEqual({ stuck: false, count: 1 });
      expect(await one.observe('alice', 'read_file', { path: 'a', n: [1, { x: 1, y: 2 }] })).toEqual({ stuck: true, count: 3 });
      const circular: Record<string, unknown> = {};
      circular['self'] = circular;
      for (let i = 0; i < 4; i++) expect(await one.observe('alice', 't', circular)).toEqual({ stuck: false, count: 1 });
    });

    it('forgets calls that fall out of the window', async () => {
      const detector = createRedisLoopDetector(a, { url: server.url, prefix: prefix(), windowMs: 150 });
      await detector.observe('alice', 't', {});
      await detector.observe('alice', 't', {});
      await new Promise((r) => setTimeout(r, 200));
      expect(await detector.observe('alice', 't', {})).toEqual({ stuck: false, count: 1 });
    });
  });

  describe('budget holds', () => {
    const open = (p: string, more: { ttlMs?: number; maxAgeMs?: number } = {}) => [createRedisBudgetHolds(a, { url: server.url, prefix: p, maxAgeMs: 60_000, ...more }), createRedisBudgetHolds(b, { url: server.url, prefix: p, maxAgeMs: 60_000, ...more })] as const;

    it('admits while what replicas hold leaves room, refuses with what is held, and frees room on release or a smaller hold', async () => {
      const [one, two] = open(prefix());
      const room = { tokens: 1000, spendUsd: Infinity };
      const first = await one.reserve('client:ci', { tokens: 600, spendUsd: 0.25 }, room);
      const second = await two.reserve('client:ci', { tokens: 600, spendUsd: 0.125 }, room);
      expect([first.ok, second.ok]).toEqual([true, true]);
      expect(await one.reserve('client:ci', { tokens: 10, spendUsd: 0 }, room)).toEqual({ ok: false, held: { tokens: 1200, spendUsd: 0.375 } });
      expect(await two.held('client:ci')).toEqual({ tokens: 1200, spendUsd: 0.375 });
      expect((await one.reserve('client:other', { tokens: 10, spendUsd: 0 }, room)).ok).toBe(true);
      if (!first.ok || !second.ok) return;
      second.hold.set({ tokens: 100, spendUsd: 0 });
      await expect.poll(() => two.held('client:ci')).toEqual({ tokens: 700, spendUsd: 0.25 });
      first.hold.release();
      first.hold.set({ tokens: 5000, spendUsd: 9 }); // after its release: nothing
      await expect.poll(() => one.held('client:ci')).toEqual({ tokens: 100, spendUsd: 0 });
      expect((await one.reserve('client:ci', { tokens: 10, spendUsd: 0 }, { tokens: 1000, spendUsd: 0.01 })).ok).toBe(true);
      expect(await one.reserve('client:ci', { tokens: 10, spendUsd: 0 }, { tokens: Infinity, spendUsd: 0 })).toMatchObject({ ok: false });
      one.close();
      two.close();
    });

    it('lets the holds of a replica that died lapse, and stops renewing a hold nobody released after its longest life', async () => {
      const p = prefix();
      const [survivor, dying] = open(p, { ttlMs: 300 });
      const leaked = createRedisBudgetHolds(a, { url: server.url, prefix: p, ttlMs: 300, maxAgeMs: 200 });
      try {
        expect((await survivor.reserve('client:ci', { tokens: 1, spendUsd: 0 }, { tokens: 10, spendUsd: Infinity })).ok).toBe(true);
        expect((await dying.reserve('client:ci', { tokens: 2, spendUsd: 0 }, { tokens: 10, spendUsd: Infinity })).ok).toBe(true);
        expect((await leaked.reserve('client:ci', { tokens: 4, spendUsd: 0 }, { tokens: 10, spendUsd: Infinity })).ok).toBe(true);
        dying.close();
        await new Promise((r) => setTimeout(r, 900));
        expect(await survivor.held('client:ci')).toEqual({ tokens: 1, spendUsd: 0 });
      } finally {
        for (const h of [survivor, dying, leaked]) h.close();
      }
    });

    it('says when this process holds nothing', async () => {
      const [one] = open(prefix());
      const taken = await one.reserve('client:ci', { tokens: 1, spendUsd: 0 }, { tokens: 10, spendUsd: Infinity });
      let idle = false;
      const waiting = one.idle().then(() => (idle = true));
      await new Promise((r) => setTimeout(r, 20));
      expect(idle).toBe(false);
      if (taken.ok) taken.hold.release();
      await waiting;
      expect(idle).toBe(true);
      one.close();
    });
  });

  it('tells every replica of the kernel events one committed, and its own listeners once', async () => {
    const p = prefix();
    const [one, two] = await Promise.all([createRedisKernelEventsBus(a, { prefix: p }), createRedisKernelEventsBus(b, { prefix: p })]);
    try {
      const heard: { by: string; notes: unknown }[] = [];
      one.subscribe((notes) => heard.push({ by: 'one', notes }));
      two.subscribe((notes) => heard.push({ by: 'two', notes }));
      one.publish([{ execution: 'e1', types: ['execution.cancelled'] }]);
      await expect.poll(() => heard.length).toBe(2);
      await new Promise((r) => setTimeout(r, 50)); // its own copy coming back through Redis is not heard again
      expect(heard).toEqual([
        { by: 'one', notes: [{ execution: 'e1', types: ['execution.cancelled'] }] },
        { by: 'two', notes: [{ execution: 'e1', types: ['execution.cancelled'] }] },
      ]);
      // A waiter on another replica wakes for its own execution's events only; else at its timeout.
      const watch = watchExecution(two, 'e2');
      const waiting = watch.wait(5000);
      one.publish([{ execution: 'e3', types: ['step.completed'] }]);
      one.publish([{ execution: 'e2', types: ['step.completed'] }]);
      expect(await waiting).toBe(true);
      expect(await watch.wait(30)).toBe(false);
      // A note that comes while the waiter is busy elsewhere (reading the database) is kept for its next wait.
      one.publish([{ execution: 'e2', types: ['execution.cancelled'] }]);
      await expect.poll(async () => watch.wait(0)).toBe(true);
      const stop = new AbortController();
      const stopped = watch.wait(5000, stop.signal);
      stop.abort('chat ended');
      await expect(stopped).rejects.toBe('chat ended');
      watch.close();
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('keeps the MCP sessions replicas share: whose each is and its initialize, for as long as it is used', async () => {
    const p = prefix();
    const [one, two] = [createRedisMcpSessions(a, { url: server.url, prefix: p }), createRedisMcpSessions(b, { url: server.url, prefix: p })];
    const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } };
    await one.put('s1', { client: 'alice', initialize }, 300);
    expect(await two.get('s1', 300)).toEqual({ client: 'alice', initialize });
    await new Promise((r) => setTimeout(r, 200));
    expect(await two.get('s1', 300)).toBeDefined(); // each look restarts its idle time
    await new Promise((r) => setTimeout(r, 200));
    expect(await one.get('s1', 300)).toBeDefined();
    await two.remove('s1');
    expect(await one.get('s1', 300)).toBeUndefined();
    await one.put('s2', { client: 'alice', initialize }, 50);
    await new Promise((r) => setTimeout(r, 100));
    expect(await two.get('s2', 50)).toBeUndefined();
    // An initialize too large to keep: the session is served where it was opened only.
    await one.put('s3', { client: 'alice', initialize: { params: { clientInfo: { name: 'x'.repeat(70_000) } } } }, 1000);
    expect(await two.get('s3', 1000)).toBeUndefined();
  });

  it('opens in this process without a URL, and says where it is', async () => {
    const here = await openSharedState({});
    expect(here.where).toBe('this process');
    await here.close();
    const there = await openSharedState({ redisUrl: server.url, prefix: prefix() });
    try {
      expect(there.where).toBe(`${server.url}`);
      // The cache replicas share: a value until its time is up. The one read back has a minute, not
      // 100 ms, which a loaded machine took between the write and the read.
      await there.cache.set('models:x', '["a"]', 60_000);
      expect(await there.cache.get('models:x')).toBe('["a"]');
      await there.cache.set('models:y', '["b"]', 100);
      await new Promise((r) => setTimeout(r, 150));
      expect(await there.cache.get('models:y')).toBeUndefined();
    } finally {
      await there.close();
    }
    expect(shownRedisUrl('redis://kiwi:s3cret@redis.internal:6379/2')).toBe('redis://kiwi:***@redis.internal:6379/2');
  });

  it('refuses a URL that is not Redis, and says what to fix when Redis cannot be reached', async () => {
    await expect(openSharedState({ redisUrl: 'http://127.0.0.1:6379' })).rejects.toThrow(/REDIS_URL must start with redis:\/\/ or rediss:\/\//);
    const gone = await startRedis();
    await gone.stop();
    const error = await openSharedState({ redisUrl: gone.url }).catch((e: unknown) => e);
    expect(isKiwiError(error, 'UNAVAILABLE')).toBe(true);
    expect((error as Error).message).toMatch(/cannot connect to the Redis of REDIS_URL \(redis:\/\/127\.0\.0\.1:\d+\/?\).*unset REDIS_URL/);
  });

  it('refuses, promptly and saying why, while Redis is away', async () => {
    const own = await startRedis();
    const redis = await connectRedis(own.url);
    const buckets = createRedisTokenBuckets(redis, { url: own.url, prefix: prefix() });
    const slots = createRedisRequestSlots(redis, { url: own.url, prefix: prefix() });
    try {
      expect(await buckets.take([{ key: 'k', max: 1, perMs: 1000 }])).toEqual({ ok: true });
      await own.stop();
      const error = await buckets.take([{ key: 'k', max: 1, perMs: 1000 }]).catch((e: unknown) => e);
      expect(isKiwiError(error, 'UNAVAILABLE')).toBe(true);
      expect((error as Error).message).toMatch(/^Redis \(redis:\/\/127\.0\.0\.1:\d+\/?\) did not answer a rate limit check: /);
      await expect(slots.acquire('dave', 1)).rejects.toThrow(/did not answer a concurrency check/);
    } finally {
      slots.close();
      redis.destroy();
      await own.stop();
    }
  });
});
