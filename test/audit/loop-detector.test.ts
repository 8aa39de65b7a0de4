import { describe, expect, it } from 'vitest';
import { createLoopDetector } from '../../src/audit/loop-detector.js';

function clock(start = Date.UTC(2025, 0, 1)) {
  let t = start;
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
}

describe('createLoopDetector', async () => {
  it('flags a session as stuck once identical calls reach the threshold', async () => {
    const detector = createLoopDetector({ now: clock().now });
    expect(await detector.observe('s1', 'fs.read', { path: 'a' })).toEqual({ stuck: false, count: 1 });
    expect(await detector.observe('s1', 'fs.read', { path: 'a' })).toEqual({ stuck: false, count: 2 });
    expect(await detector.observe('s1', 'fs.read', { path: 'a' })).toEqual({ stuck: true, count: 3 });
    expect(await detector.observe('s1', 'fs.read', { path: 'a' })).toEqual({ stuck: true, count: 4 });
  });

  it('honours a custom threshold', async () => {
    const detector = createLoopDetector({ threshold: 2, now: clock().now });
    await detector.observe('s1', 't', 1);
    expect((await detector.observe('s1', 't', 1)).stuck).toBe(true);
  });

  it('forgets calls that fall out of the window', async () => {
    const c = clock();
    const detector = createLoopDetector({ windowMs: 60_000, now: c.now });
    await detector.observe('s1', 'fs.read', { path: 'a' });
    c.advance(30_000);
    await detector.observe('s1', 'fs.read', { path: 'a' });
    c.advance(30_000); // the first call is now exactly windowMs old: out
    expect(await detector.observe('s1', 'fs.read', { path: 'a' })).toEqual({ stuck: false, count: 2 });
    c.advance(60_001);
    expect(await detector.observe('s1', 'fs.read', { path: 'a' })).toEqual({ stuck: false, count: 1 });
  });

  it('counts different args, tools and sessions apart', async () => {
    const detector = createLoopDetector({ now: clock().now });
    await detector.observe('s1', 'fs.read', { path: 'a' });
    await detector.observe('s1', 'fs.read', { path: 'a' });
    expect((await detector.observe('s1', 'fs.read', { path: 'b' })).count).toBe(1);
    expect((await detector.observe('s1', 'fs.write', { path: 'a' })).count).toBe(1);
    expect((await detector.observe('s2', 'fs.read', { path: 'a' })).count).toBe(1);
    expect((await detector.observe('s1', 'fs.read', { path: 'a', extra: null })).count).toBe(1);
    expect((await detector.observe('s1', 'fs.read', ['a'])).count).toBe(1);
    expect((await detector.observe('s1', 'fs.read', { path: 'a' })).count).toBe(3);
  });

  it('treats args that differ only in key order as the same call', async () => {
    const detector = createLoopDetector({ now: clock().now });
    await detector.observe('s1', 'http.get', { url: 'u', opts: { a: 1, b: [1, { y: 2, x: 1 }] } });
    await detector.observe('s1', 'http.get', { opts: { b: [1, { x: 1, y: 2 }], a: 1 }, url: 'u' });
    expect(await detector.observe('s1', 'http.get', { opts: { a: 1, b: [1, { x: 1, y: 2 }] }, url: 'u' })).toEqual({ stuck: true, count: 3 });
  });

  it('never flags args it cannot serialise, and does not throw on them', async () => {
    const detector = createLoopDetector({ now: clock().now });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (let i = 0; i < 5; i += 1) expect(await detector.observe('s1', 't', circular)).toEqual({ stuck: false, count: 1 });
    expect(await detector.observe('s1', 't', 10n)).toEqual({ stuck: false, count: 1 });
  });

  it('keeps memory bounded: least recently active sessions and calls are evicted', async () => {
    const c = clock();
    const detector = createLoopDetector({ now: c.now, maxSessions: 3, maxCallsPerSession: 4 });
    for (let i = 0; i < 50; i += 1) await detector.observe(`s${i}`, 't', i);
    expect(detector.stats().sessions).toBe(3);
    for (let i = 0; i < 50; i += 1) await detector.observe('busy', 't', i);
    expect(detector.stats()).toEqual({ sessions: 3, calls: 2 + 4 });
    // The evicted first session starts from scratch.
    expect((await detector.observe('s0', 't', 0)).count).toBe(1);
  });

  it('drops sessions idle for longer than the window', async () => {
    const c = clock();
    const detector = createLoopDetector({ now: c.now, windowMs: 1000 });
    for (let i = 0; i < 10; i += 1) await detector.observe(`s${i}`, 't', {});
    c.advance(1000);
    await detector.observe('fresh', 't', {});
    expect(detector.stats()).toEqual({ sessions: 1, calls: 1 });
  });

  it.each([
    [{ threshold: 0 }, /threshold is 0: use an integer from 1/],
    [{ threshold: 2.5 }, /threshold is 2.5/],
    [{ windowMs: 0 }, /windowMs is 0/],
    [{ windowMs: Number.POSITIVE_INFINITY }, /windowMs is Infinity/],
    [{ maxSessions: 0 }, /maxSessions is 0/],
    [{ maxCallsPerSession: -1 }, /maxCallsPerSession is -1/],
  ])('rejects bad options %j', (bad, message) => {
    expect(() => createLoopDetector(bad)).toThrow(message);
    try {
      createLoopDetector(bad);
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_INPUT' });
    }
  });

  it('rejects a non-string session or tool id', async () => {
    const detector = createLoopDetector();
    await expect(detector.observe(undefined as unknown as string, 't', {})).rejects.toThrow(/session id and a tool id as strings/);
  });
});
