import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { dot } from '../../src/embed/vector-math.js';
import { sameAnswer, type Disagreement } from '../../src/prefetch/prefetching-resolver.js';
import type { Resolution } from '../../src/resolver/types.js';
import { hashVector } from '../helpers/hash-embedder.js';
import { expectKiwiError } from '../fixtures/prefetch/expect-kiwi.js';
import { openWorld, type World } from '../fixtures/prefetch/prefetch-world.js';
import { wirePrefetch, type WirePrefetchOptions } from '../fixtures/prefetch/wire-prefetch.js';

let world: World;

beforeAll(async () => {
  world = await openWorld();
});

afterEach(async () => {
  // Speculative calls outlive the test's assertions; none may still run into the next test.
  world.server.release();
  await world.settle();
});

afterAll(async () => {
  await world?.close();
});

const SESSION = 'prefetch-test';

function setup(resolverOptions: WirePrefetchOptions['resolverOptions'] = {}) {
  return wirePrefetch(world, { session: SESSION, resolverOptions });
}

const cosine = (a: string, b: string) => dot(hashVector(a, 128), hashVector(b, 128));
const gatewayCall = (tool: string, args: Record<string, unknown>, signal?: AbortSignal, item?: 'directive') => ({
  target: { tool, args, ...(item ? { item } : {}) },
  caller: { session: SESSION, client: SESSION, source: 'gateway' as const },
  ...(signal ? { run: { signal } } : {}),
});

function callOf(r: Resolution) {
  expect(r.status, JSON.stringify(r)).toBe('resolved');
  return r.status === 'resolved' ? r.call : { tool: '', arguments: {} };
}

describe('prefetching resolver: the early call from the intent\'s beginning', () => {
  it('offers the call resolved from the search prefetched for a beginning of the intent, then answers the normal way', async () => {
    const { resolver, prefetch, cache } = setup();
    const beginning = 'look up the web domain of the company';
    await prefetch(beginning);
    const intent = 'look up the web domain of the company "Acme Corp"';
    const offered: { tool: string; arguments: Record<string, unknown> }[] = [];
    const r = await resolver.resolve(intent, { context: '', early: (call) => offered.push(call) });
    // The early call's arguments come from the whole intent, not from the beginning.
    expect(offered).toEqual([{ tool: 'lookup_company_domain', arguments: { company: 'Acme Corp' } }]);
    expect(sameAnswer(r, await world.resolver.resolve(intent))).toBe(true);
    expect(cache.get(beginning)?.used).toBe(true);
  });

  it('offers nothing when no prefetched text begins the intent, or it covers less than half of it', async () => {
    const { resolver, prefetch } = setup();
    await prefetch('look up');
    await prefetch('update the CRM record');
    const offered: unknown[] = [];
    await resolver.resolve('look up the web domain of the company "Acme Corp"', { context: '', early: (call) => offered.push(call) });
    expect(offered).toEqual([]);
  });
});

describe('prefetching resolver: retrievals', () => {
  it('a hit reuses the prefetched search (the index is not searched) and answers like the normal path', async () => {
    const { counters, resolver, prefetch } = setup({ minCosine: 0.9 });
    await prefetch('I will look up the web domain of Acme Corp');
    const intent = 'look up the web domain of "Acme Corp"';
    const searches = world.search.calls;
    const r = await resolver.resolve(intent, { context: '' });
    expect(world.search.calls).toBe(searches);
    expect(counters).toMatchObject({ hits: 1, misses: 0 });
    expect(counters.savedMs).toBeGreaterThanOrEqual(0);
    expect(r.timings.searchMs).toBe(0);
    expect(r.notes.join(' ')).toMatch(/prefetch: reused the search made ahead for "I will look up/);
    expect(sameAnswer(r, await world.resolver.resolve(intent))).toBe(true);
    expect(callOf(r)).toEqual({ tool: 'lookup_company_domain', arguments: { company: 'Acme Corp' } });
  });

  it('a miss resolves the normal way (the index is searched)', async () => {
    const { counters, resolver, prefetch } = setup({ minCosine: 0.9 });
    await prefetch('I will look up the web domain of Acme Corp');
    const searches = world.search.calls;
    const r = await resolver.resolve('get the weather forecast for "Oslo"', { context: '' });
    expect(world.search.calls).toBe(searches + 1);
    expect(counters).toMatchObject({ hits: 0, misses: 1 });
    expect(callOf(r)).toEqual({ tool: 'get_weather_forecast', arguments: { city: 'Oslo' } });
  });

  it('reuses a prefetch only at or above minCosine', async () => {
    const prefetched = 'look up the web domain of a company';
    const intent = 'look up the domain of "Acme Corp" on the web';
    const c = cosine(prefetched, intent);
    expect(c).toBeGreaterThan(0.3);
    expect(c).toBeLessThan(0.95);
    const strict = setup({ minCosine: Math.min(1, c + 0.01) });
    await strict.prefetch(prefetched);
    await strict.resolver.resolve(intent, { context: '' });
    expect(strict.counters).toMatchObject({ hits: 0, misses: 1 });
    const loose = setup({ minCosine: c - 0.01 });
    await loose.prefetch(prefetched);
    await loose.resolver.resolve(intent, { context: '' });
    expect(loose.counters).toMatchObject({ hits: 1, misses: 0 });
  });

  it('takes the arguments from the real intent, never from the prefetched text', async () => {
    const { counters, resolver, prefetch } = setup({ minCosine: 0.7 });
    await prefetch('get the weather forecast for Paris');
    expect(cosine('get the weather forecast for Paris', 'get the weather forecast for "Oslo"')).toBeGreaterThan(0.7);
    const r = await resolver.resolve('get the weather forecast for "Oslo"', { context: '' });
    expect(counters.hits).toBe(1);
    expect(callOf(r)).toEqual({ tool: 'get_weather_forecast', arguments: { city: 'Oslo' } });
  });

  it('with verify, checks every hit against the normal path, counts disagreements and answers the normal way', async () => {
    const seen: Disagreement[] = [];
    const { counters, resolver, prefetch } = setup({ minCosine: 0.3, verify: true, onDisagreement: (d) => seen.push(d) });
    await prefetch('Next I will update the CRM record of the company');
    const intent = 'look up the web domain of the company';
    expect(cosine('Next I will update the CRM record of the company', intent)).toBeGreaterThan(0.3);
    const r = await resolver.resolve(intent, { context: '' });
    expect(counters).toMatchObject({ hits: 1, verified: 1, disagreements: 1 });
    expect(seen[0]?.prefetched.candidates[0]?.tool).toBe('update_crm_record');
    expect(seen[0]?.normal.candidates[0]?.tool).toBe('lookup_company_domain');
    expect(r.candidates[0]?.tool).toBe('lookup_company_domain');
    // An exact paraphrase agrees.
    await prefetch('I will look up the web domain of Initech');
    await resolver.resolve('look up the web domain of "Initech"', { context: '' });
    expect(counters).toMatchObject({ hits: 2, verified: 2, disagreements: 1 });
  });

  it('by default (minCosine 1) reuses only a prefetch of the exact text, without embedding the intent', async () => {
    const { counters, resolver, prefetch } = setup();
    await prefetch('look up the web domain of "Umbrella"');
    const embeds = world.embedder.calls;
    const searches = world.search.calls;
    await resolver.resolve('  look up the web domain of "Umbrella"  ', { context: '' });
    expect(counters.hits).toBe(1);
    expect(world.embedder.calls).toBe(embeds);
    expect(world.search.calls).toBe(searches);
    await resolver.resolve('look up the web domain of "Umbrella" ', { context: '' }); // the same after trimming
    await resolver.resolve('Look up the web domain of "Umbrella"', { context: '' });
    expect(counters).toMatchObject({ hits: 2, misses: 1 });
  });

  it('named and empty intents go the normal way, counted neither hit nor miss', async () => {
    const { counters, resolver, prefetch } = setup({ minCosine: 0 });
    await prefetch('I will look up the web domain of Acme Corp');
    const named = await resolver.resolve('run `update_crm_record` for "Acme Corp"', { context: '' });
    expect(callOf(named)).toEqual({ tool: 'update_crm_record', arguments: { company: 'Acme Corp' } });
    const empty = await resolver.resolve('  ', { context: '' });
    expect(empty.status === 'unresolved' && empty.reason).toMatch(/empty/);
    expect(counters).toMatchObject({ hits: 0, misses: 0 });
  });

  it('is cancelled through its signal', async () => {
    const { resolver } = setup();
    const controller = new AbortController();
    controller.abort();
    await expect(resolver.resolve('weather in Rome', { signal: controller.signal })).rejects.toThrow(/cancel/i);
  });

  it('rejects a bad minCosine with a clear error', () => {
    expectKiwiError(() => setup({ minCosine: 1.2 }), 'INVALID_INPUT', /minCosine must be a number from 0 to 1/);
  });
});

describe('prefetching resolver: speculative calls', () => {
  it('answers the identical call with the speculative result, checked and audited through proxy.reuse', async () => {
    const { counters, resolver, prefetch } = setup();
    const entry = await prefetch('To enrich these leads I will look up the web domain of "Stark Industries".');
    const speculation = entry!.speculations[0]!;
    const ran = await speculation.outcome;
    const requests = world.server.requests.length;
    const r = await resolver.resolve('look up the web domain of "Stark Industries"', { context: '' });
    const call = callOf(r);
    const outcome = await resolver.callThrough(gatewayCall(call.tool, call.arguments), world.project.proxy);
    expect(outcome.status === 'ok' && outcome.result).toEqual(ran.status === 'ok' && ran.result);
    expect(counters).toMatchObject({ speculativeStarted: 1, speculativeUsed: 1, speculativeDiscarded: 0 });
    expect(speculation.state).toBe('used');
    expect(world.server.requests.length).toBe(requests);
    await world.project.audit.flush();
    const records = await readAuditTail({ dir: world.project.auditDir, limit: 1000, session: SESSION });
    const mine = records.filter((rec) => JSON.stringify(rec.args) === '{"company":"Stark Industries"}');
    expect(mine.map((rec) => [rec.source, rec.reused])).toEqual([
      ['prefetch', undefined],
      ['gateway', ran.callId],
    ]);
    // Used once: the same call again runs for real.
    const again = await resolver.callThrough(gatewayCall(call.tool, call.arguments), world.project.proxy);
    expect(again.status).toBe('ok');
    expect(counters.speculativeUsed).toBe(1);
  });

  it('never hands a tool\'s speculative result to a directive or knowledge call of the same name', async () => {
    const { counters, resolver, prefetch } = setup();
    const entry = await prefetch('I will look up the web domain of "Oscorp".');
    const speculation = entry!.speculations[0]!;
    await speculation.outcome;
    const asDirective = gatewayCall('lookup_company_domain', { company: 'Oscorp' }, undefined, 'directive');
    const outcome = await resolver.callThrough(asDirective, world.project.proxy);
    // Run for real as what it names: this project has no such directive.
    expect(outcome).toMatchObject({ status: 'error', error: { code: 'TOOL_NOT_FOUND' } });
    expect(counters.speculativeUsed).toBe(0);
    expect(speculation.state).not.toBe('used');
  });

  it('takeSpeculation gives a result only for exactly the same tool and canonical arguments', async () => {
    const { counters, resolver, prefetch } = setup();
    const entry = await prefetch('I will look up the web domain of "Wayne Enterprises".');
    await entry!.speculations[0]!.outcome;
    expect(resolver.takeSpeculation({ tool: 'lookup_company_domain', arguments: { company: 'Wayne Enterprises Inc' } })).toBeUndefined();
    expect(resolver.takeSpeculation({ tool: 'get_weather_forecast', arguments: { company: 'Wayne Enterprises' } })).toBeUndefined();
    expect(resolver.takeSpeculation({ tool: 'lookup_company_domain', arguments: { company: 'Wayne Enterprises', extra: 1 } })).toBeUndefined();
    expect(resolver.takeSpeculation({ tool: 'lookup_company_domain', arguments: { company: 'Wayne Enterprises' } }, { session: 'another' })).toBeUndefined();
    const taken = resolver.takeSpeculation({ tool: 'lookup_company_domain', arguments: { company: 'Wayne Enterprises' } }, { session: SESSION });
    expect((await taken)?.status).toBe('ok');
    expect(resolver.takeSpeculation({ tool: 'lookup_company_domain', arguments: { company: 'Wayne Enterprises' } })).toBeUndefined();
    expect(counters).toMatchObject({ speculativeUsed: 1, speculativeDiscarded: 0 });
  });

  it('a call that may change state discards the speculations; the read after it runs for real', async () => {
    const { counters, resolver, prefetch } = setup();
    const entry = await prefetch('I will look up the web domain of "Hooli".');
    const speculation = entry!.speculations[0]!;
    await speculation.outcome;
    const write = await resolver.callThrough(gatewayCall('update_crm_record', { company: 'Hooli' }), world.project.proxy);
    expect(write.status).toBe('ok');
    expect(speculation.state).toBe('discarded');
    const read = await resolver.callThrough(gatewayCall('lookup_company_domain', { company: 'Hooli' }), world.project.proxy);
    expect(read.status).toBe('ok');
    await world.project.audit.flush();
    const records = await readAuditTail({ dir: world.project.auditDir, limit: 1000, session: SESSION });
    expect(records.find((rec) => rec.call_id === read.callId)).toMatchObject({ source: 'gateway', decision: 'allow' });
    expect(records.find((rec) => rec.call_id === read.callId)?.reused).toBeUndefined();
    expect(counters).toMatchObject({ speculativeUsed: 0, speculativeDiscarded: 1 });
  });

  it('waits for a speculation still running; without a fallback takeSpeculation leaves it alone', async () => {
    world.server.hold();
    const { counters, resolver, prefetch } = setup();
    const before = world.server.requests.length;
    const entry = await prefetch('Now I will fetch the sales report of quarter "Q1".');
    expect(entry?.speculations[0]?.state).toBe('running');
    await world.server.arrived(before + 1);
    expect(resolver.takeSpeculation({ tool: 'fetch_sales_report', arguments: { quarter: 'Q1' } })).toBeUndefined();
    const pending = resolver.callThrough(gatewayCall('fetch_sales_report', { quarter: 'Q1' }), world.project.proxy);
    expect(entry!.speculations[0]!.state).toBe('taken');
    world.server.release();
    const outcome = await pending;
    expect(outcome.status === 'ok' && JSON.parse(outcome.result.text)).toMatchObject({ report: 'Q1' });
    expect(world.server.requests.length).toBe(before + 1);
    expect(counters).toMatchObject({ speculativeUsed: 1 });
  });

  it('a speculation that fails is discarded and the real call runs instead', async () => {
    world.server.hold();
    const { counters, resolver, prefetch } = setup();
    const before = world.server.requests.length;
    const entry = await prefetch('Now I will fetch the sales report of quarter "Q2".');
    expect(entry?.speculations[0]?.state).toBe('running');
    await world.server.arrived(before + 1);
    const pending = resolver.callThrough(gatewayCall('fetch_sales_report', { quarter: 'Q2' }), world.project.proxy);
    world.server.fail();
    await world.server.arrived(before + 2);
    world.server.release();
    const outcome = await pending;
    expect(outcome.status === 'ok' && JSON.parse(outcome.result.text)).toMatchObject({ report: 'Q2' });
    expect(counters).toMatchObject({ speculativeUsed: 0, speculativeDiscarded: 1 });
  });

  it('when the caller gives up while waiting, the speculation is aborted and no real call is made', async () => {
    world.server.hold();
    const { counters, resolver, prefetch } = setup();
    const before = world.server.requests.length;
    const entry = await prefetch('Now I will fetch the sales report of quarter "Q4".');
    expect(entry?.speculations[0]?.state).toBe('running');
    await world.server.arrived(before + 1);
    const controller = new AbortController();
    const pending = resolver.callThrough(gatewayCall('fetch_sales_report', { quarter: 'Q4' }, controller.signal), world.project.proxy);
    controller.abort();
    const outcome = await pending;
    expect(outcome.status).toBe('error');
    expect(world.server.requests.length).toBe(before + 1);
    expect(counters).toMatchObject({ speculativeUsed: 0, speculativeDiscarded: 1 });
    world.server.release();
  });
});
