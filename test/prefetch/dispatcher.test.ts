import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { createCounters } from '../../src/prefetch/counters.js';
import { createPrefetchDispatcher, type PrefetchDispatcherDeps } from '../../src/prefetch/dispatcher.js';
import { createPrefetchCache } from '../../src/prefetch/prefetch-cache.js';
import { createPredictor, type Predictor } from '../../src/prefetch/predictor.js';
import type { Snapshot } from '../../src/prefetch/types.js';
import { expectKiwiError } from '../fixtures/prefetch/expect-kiwi.js';
import { gatedPredictor } from '../fixtures/prefetch/gated-predictor.js';
import { openWorld, type World } from '../fixtures/prefetch/prefetch-world.js';

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

const snap = (query: string): Snapshot => ({ text: query, query, at: query.length });

function setup(overrides: Partial<PrefetchDispatcherDeps> & { predictor?: Predictor } = {}) {
  const counters = createCounters();
  const cache = createPrefetchCache({ counters });
  const predictor = overrides.predictor ?? createPredictor({ resolver: world.resolver });
  const dispatcher = createPrefetchDispatcher({
    predictor,
    resolver: world.resolver,
    cache,
    tools: world.tools,
    call: world.call,
    session: 'prefetch-test',
    caller: { client: 'prefetch-test' },
    counters,
    ...overrides,
  });
  return { counters, cache, dispatcher };
}

async function auditRecords() {
  await world.project.audit.flush();
  return readAuditTail({ dir: world.project.auditDir, limit: 1000, session: 'prefetch-test' });
}

describe('prefetch dispatcher', () => {
  it('prefetches a snapshot and runs its read-only call ahead, audited with source prefetch', async () => {
    const { counters, cache, dispatcher } = setup();
    const query = 'To enrich these leads I will look up the web domain of "Acme Corp".';
    dispatcher.onSnapshot(snap(query), null);
    await dispatcher.idle();
    const entry = cache.get(query);
    expect(entry?.retrieval.candidates[0]?.tool).toBe('lookup_company_domain');
    expect(entry?.speculations).toHaveLength(1);
    const speculation = entry!.speculations[0]!;
    expect(speculation).toMatchObject({ tool: 'lookup_company_domain', argsKey: '{"company":"Acme Corp"}', session: 'prefetch-test' });
    const outcome = await speculation.outcome;
    expect(outcome.status === 'ok' && JSON.parse(outcome.result.text)).toEqual({ company: 'Acme Corp', domain: 'acmecorp.example' });
    expect(speculation.state).toBe('ready');
    expect(counters).toMatchObject({ snapshots: 1, prefetches: 1, speculativeStarted: 1 });
    expect(counters.predictions).toBeGreaterThanOrEqual(1);
    const records = await auditRecords();
    // Under a client of its own: a guess never spends the agent's rate limits or trips its loop detector.
    expect(records.find((r) => r.call_id === outcome.callId)).toMatchObject({ tool: 'lookup_company_domain', source: 'prefetch', decision: 'allow', args: { company: 'Acme Corp' }, session: 'prefetch-test', client: 'prefetch-test+prefetch' });
  });

  it('with speculate off (a resolve-only request) prefetches the search but runs nothing, early calls included', async () => {
    const { counters, cache, dispatcher } = setup({ speculate: false });
    const query = 'To enrich these leads I will look up the web domain of "Acme Corp".';
    dispatcher.onSnapshot(snap(query), null);
    await dispatcher.idle();
    const entry = cache.get(query);
    expect(entry?.retrieval.candidates[0]?.tool).toBe('lookup_company_domain');
    dispatcher.speculateCall(entry!, { tool: 'lookup_company_domain', arguments: { company: 'Acme Corp' } });
    expect(entry?.speculations).toEqual([]);
    expect(counters.speculativeStarted).toBe(0);
  });

  it('never runs a tool that may change state, however confident the prediction', async () => {
    const { counters, cache, dispatcher } = setup({ threshold: 0 });
    const query = 'Next I will update the CRM record of "Globex".';
    dispatcher.onSnapshot(snap(query), null);
    await dispatcher.idle();
    expect(cache.get(query)?.retrieval.candidates[0]?.tool).toBe('update_crm_record');
    expect(counters.predictions).toBeGreaterThanOrEqual(1);
    expect(cache.get(query)?.speculations.map((s) => s.tool)).not.toContain('update_crm_record');
    expect((await auditRecords()).filter((r) => r.tool === 'update_crm_record')).toEqual([]);
  });

  it('does not speculate a call whose arguments the text does not give, nor below its threshold', async () => {
    const missing = setup();
    missing.dispatcher.onSnapshot(snap('Let me look up the web domain of the company.'), null);
    await missing.dispatcher.idle();
    expect(missing.counters).toMatchObject({ prefetches: 1, speculativeStarted: 0 });
    const timid = setup({ threshold: 1 });
    timid.dispatcher.onSnapshot(snap('I might look up the web domain of "Initech" later.'), null);
    await timid.dispatcher.idle();
    expect(timid.counters).toMatchObject({ prefetches: 1, speculativeStarted: 0 });
  });

  it('prefetches a text once and runs an identical call once', async () => {
    const { counters, dispatcher } = setup();
    dispatcher.onSnapshot(snap('I will look up the web domain of "Hooli".'), null);
    await dispatcher.idle();
    dispatcher.onSnapshot(snap('I will look up the web domain of "Hooli".'), null);
    dispatcher.onSnapshot(snap('Now let me look up the web domain of "Hooli".'), null);
    await dispatcher.idle();
    expect(counters).toMatchObject({ snapshots: 3, prefetches: 2, speculativeStarted: 1 });
  });

  it('does not queue a text that is being predicted already', async () => {
    const gate = gatedPredictor(createPredictor({ resolver: world.resolver }));
    const { counters, dispatcher } = setup({ predictor: gate.predictor, speculate: false });
    dispatcher.onSnapshot(snap('weather in Madrid'), null);
    dispatcher.onSnapshot(snap('  weather in Madrid '), null);
    expect(gate.state.started).toEqual(['weather in Madrid']);
    const idle = dispatcher.idle();
    gate.open();
    await idle;
    expect(counters).toMatchObject({ snapshots: 2, prefetches: 1 });
  });

  it('runs at most `concurrency` predictions and drops the oldest queued snapshot when the queue is full', async () => {
    const gate = gatedPredictor(createPredictor({ resolver: world.resolver }));
    const { counters, cache, dispatcher } = setup({ predictor: gate.predictor, concurrency: 2, maxQueued: 2, speculate: false });
    const queries = ['weather in Paris one', 'weather in Paris two', 'weather in Paris three', 'weather in Paris four', 'weather in Paris five'];
    for (const q of queries) dispatcher.onSnapshot(snap(q), null);
    expect(gate.state.started).toEqual(queries.slice(0, 2));
    expect(counters.dropped).toBe(1);
    const idle = dispatcher.idle();
    while (gate.state.started.length < 4 || gate.state.active > 0) {
      gate.open();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await idle;
    expect(gate.state.started).toEqual([queries[0], queries[1], queries[3], queries[4]]);
    expect(gate.state.maxActive).toBe(2);
    expect(cache.get(queries[2]!)).toBeUndefined();
    expect(counters.prefetches).toBe(4);
  });

  it('cancel() aborts the predictions in flight and forgets the queue; later snapshots still run', async () => {
    const gate = gatedPredictor(createPredictor({ resolver: world.resolver }));
    const { counters, cache, dispatcher } = setup({ predictor: gate.predictor, concurrency: 1 });
    dispatcher.onSnapshot(snap('weather in Oslo alpha'), null);
    dispatcher.onSnapshot(snap('weather in Oslo beta'), null);
    dispatcher.cancel();
    await dispatcher.idle();
    expect(gate.state.started).toEqual(['weather in Oslo alpha']);
    expect(counters.prefetches).toBe(0);
    expect(cache.size).toBe(0);
    dispatcher.onSnapshot(snap('weather in Oslo gamma'), null);
    const idle = dispatcher.idle();
    gate.open();
    await idle;
    expect(cache.get('weather in Oslo gamma')).toBeDefined();
  });

  it('cancel() aborts a speculative call still running and counts it discarded; without speculations it lets it run', async () => {
    world.server.hold();
    const { counters, cache, dispatcher } = setup();
    const before = world.server.requests.length;
    const query = 'Now I will fetch the sales report of quarter "Q3".';
    dispatcher.onSnapshot(snap(query), null);
    await dispatcher.idle();
    const speculation = cache.get(query)!.speculations[0]!;
    expect(speculation).toMatchObject({ tool: 'fetch_sales_report', state: 'running' });
    await world.server.arrived(before + 1);
    dispatcher.cancel({ speculations: false });
    expect(speculation.state).toBe('running');
    dispatcher.cancel();
    const outcome = await speculation.outcome;
    expect(outcome.status).toBe('error');
    expect(speculation.state).toBe('discarded');
    expect(counters).toMatchObject({ speculativeStarted: 1, speculativeDiscarded: 1, speculativeUsed: 0 });
    world.server.release();
  });

  it('starts at most maxSpeculations speculative calls per dispatcher, early calls included, and counts the ones it refuses', async () => {
    const { counters, cache, dispatcher } = setup({ maxSpeculations: 1 });
    dispatcher.onSnapshot(snap('I will look up the web domain of "Pied Piper".'), null);
    await dispatcher.idle();
    dispatcher.onSnapshot(snap('I will look up the web domain of "Raviga".'), null);
    await dispatcher.idle();
    expect(counters).toMatchObject({ prefetches: 2, speculativeStarted: 1, speculativeRefused: 1 });
    dispatcher.speculateCall(cache.get('I will look up the web domain of "Raviga".')!, { tool: 'lookup_company_domain', arguments: { company: 'Bachmanity' } });
    expect(counters).toMatchObject({ speculativeStarted: 1, speculativeRefused: 2 });
    const ran = (await auditRecords()).filter((r) => r.tool === 'lookup_company_domain').map((r) => r.args);
    expect(ran).not.toContainEqual({ company: 'Raviga' });
    expect(ran).not.toContainEqual({ company: 'Bachmanity' });
  });

  it('searches on text cut inside a value but runs no tool on it: a value must be closed (quoted, quote closed)', async () => {
    const { counters, cache, dispatcher } = setup();
    const cut = 'To enrich these leads I will look up the web domain of "Initrode Glob';
    const bare = 'To enrich these leads I will look up the web domain of Umbrella.';
    for (const query of [cut, bare]) {
      dispatcher.onSnapshot(snap(query), null);
      await dispatcher.idle();
      expect(cache.get(query)?.retrieval.candidates[0]?.tool, query).toBe('lookup_company_domain');
      expect(cache.get(query)?.speculations, `no speculative run on "${query}"`).toEqual([]);
    }
    expect(counters).toMatchObject({ prefetches: 2, speculativeStarted: 0, speculativeRefused: 2 });
    const ran = (await auditRecords()).filter((r) => r.tool === 'lookup_company_domain').map((r) => r.args);
    expect(ran).not.toContainEqual({ company: 'Initrode Glob' });
    expect(ran).not.toContainEqual({ company: 'Umbrella' });
  });

  it('runs no tool on a JSON key taken for a value while an exact call is still being written (issue 22)', async () => {
    const { counters, cache, dispatcher } = setup();
    const keyOnly = 'I will check it. [TOOL: lookup_company_domain {"company":';
    const cutValue = 'I will check it. [TOOL: lookup_company_domain {"company": "Hool';
    for (const query of [keyOnly, cutValue]) {
      dispatcher.onSnapshot(snap(query), null);
      await dispatcher.idle();
      expect(cache.get(query)?.speculations, `no speculative run on ${query}`).toEqual([]);
    }
    expect(counters.speculativeStarted).toBe(0);
    const ran = (await auditRecords()).filter((r) => r.tool === 'lookup_company_domain').map((r) => r.args);
    expect(ran).not.toContainEqual({ company: 'company' });
  });

  it('a failing prediction is logged and never thrown', async () => {
    const messages: string[] = [];
    const broken: Predictor = { predict: () => Promise.reject(new Error('index closed')) };
    const { counters, dispatcher } = setup({ predictor: broken, log: (m) => messages.push(m) });
    dispatcher.onSnapshot(snap('anything at all'), null);
    await dispatcher.idle();
    expect(messages.join(' ')).toMatch(/index closed.*normal way/);
    expect(counters.prefetches).toBe(0);
  });

  it('rejects bad options with a clear error', () => {
    expectKiwiError(() => setup({ concurrency: 0 }), 'INVALID_INPUT', /concurrency must be an integer from 1/);
    expectKiwiError(() => setup({ maxQueued: -1 }), 'INVALID_INPUT', /maxQueued/);
    expectKiwiError(() => setup({ threshold: 1.5 }), 'INVALID_INPUT', /threshold must be a number from 0 to 1/);
  });
});
