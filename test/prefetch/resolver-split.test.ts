import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/base/canonical-json.js';
import type { Resolution } from '../../src/resolver/types.js';
import { openWorld, type World } from '../fixtures/prefetch/prefetch-world.js';

let world: World;

beforeAll(async () => {
  world = await openWorld();
});

afterAll(async () => {
  await world?.close();
});

/** A resolution without its timings, which differ from run to run. */
function answer(r: Resolution): string {
  const { timings: _, ...rest } = r;
  return canonicalJson(rest);
}

const INTENTS = [
  'look up the web domain of "Acme Corp"',
  'look up the domain of a company',
  'update the CRM record of "Globex"',
  'get the weather forecast for "Oslo"',
  'weather in Paris',
  'fetch the sales report of quarter "Q3"',
  'use `lookup_company_domain` for "Initech"',
  'zebra quantum lullaby',
  '',
  '   \u0000  ',
  'read "README.md" AND (NOT *',
  'update_crm_record company=Umbrella',
  'what is the forecast',
];

describe('resolver split: retrieve + complete', () => {
  it('resolve(i) answers exactly like complete(i, retrieve(i)), for many intents and limits', async () => {
    for (const intent of INTENTS) {
      for (const limit of [1, 3, 10]) {
        const whole = await world.resolver.resolve(intent, { limit, context: 'for the Acme account' });
        const split = await world.resolver.complete(intent, await world.resolver.retrieve(intent), { limit, context: 'for the Acme account' });
        expect(answer(split), intent).toBe(answer(whole));
      }
    }
  });

  it('retrieve gives the whole pool before the limit cut, the vector and the timings', async () => {
    const retrieval = await world.resolver.retrieve('look up the web domain of "Acme Corp"');
    expect(retrieval.intent).toBe('look up the web domain of "Acme Corp"');
    expect(retrieval.candidates.length).toBe(4);
    expect(retrieval.candidates[0]?.tool).toBe('lookup_company_domain');
    expect(retrieval.vector).toBeInstanceOf(Float32Array);
    expect(retrieval.named).toBeUndefined();
    expect(retrieval.confidence).toBeGreaterThan(0.3);
    const r = await world.resolver.complete(retrieval.intent, retrieval, { limit: 1 });
    expect(r.candidates).toHaveLength(1);
  });

  it('an exact call needs no search and carries no vector; a tool named in a sentence is searched like any intent', async () => {
    const before = world.search.calls;
    const retrieval = await world.resolver.retrieve('fetch_sales_report {}');
    expect(retrieval).toMatchObject({ named: true, confidence: 1, candidates: [{ tool: 'fetch_sales_report', score: 1 }] });
    expect(retrieval.vector).toBeUndefined();
    expect(world.search.calls).toBe(before);
    const mention = await world.resolver.retrieve('use `fetch_sales_report` now');
    expect(mention.named).toBeUndefined();
    expect(mention.vector).toBeInstanceOf(Float32Array);
  });

  it('complete fills the arguments from the intent it is given, not the one retrieved', async () => {
    const retrieval = await world.resolver.retrieve('get the weather forecast for "Paris"');
    const r = await world.resolver.complete('get the weather forecast for "Lisbon"', retrieval);
    expect(r.status === 'resolved' && r.call).toEqual({ tool: 'get_weather_forecast', arguments: { city: 'Lisbon' } });
  });

  it('a tool the given intent names wins over the retrieval', async () => {
    const retrieval = await world.resolver.retrieve('get the weather forecast for "Paris"');
    const r = await world.resolver.complete('run `lookup_company_domain` for "Acme"', retrieval);
    expect(r.status === 'resolved' && r.call).toEqual({ tool: 'lookup_company_domain', arguments: { company: 'Acme' } });
    expect(r.notes.join(' ')).toMatch(/names the tool/);
  });

  it('embedQuery is remembered: the second call does not reach the model', async () => {
    const calls = world.embedder.calls;
    const a = await world.resolver.embedQuery('a sentence never embedded before');
    const b = await world.resolver.embedQuery('a sentence never embedded before');
    expect(b).toBe(a);
    expect(world.embedder.calls).toBe(calls + 1);
  });

  it('retrieve is cancelled through its signal', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(world.resolver.retrieve('weather in Rome', { signal: controller.signal })).rejects.toThrow(/cancel/i);
  });
});
