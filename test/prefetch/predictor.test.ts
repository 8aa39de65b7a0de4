import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPredictor } from '../../src/prefetch/predictor.js';
import type { Snapshot } from '../../src/prefetch/types.js';
import { expectKiwiError } from '../fixtures/prefetch/expect-kiwi.js';
import { openWorld, type World } from '../fixtures/prefetch/prefetch-world.js';
import { tableTransitions } from '../fixtures/prefetch/table-transitions.js';

let world: World;

beforeAll(async () => {
  world = await openWorld();
});

afterAll(async () => {
  await world?.close();
});

const snap = (query: string): Snapshot => ({ text: query, query, at: query.length });

describe('predictor', () => {
  it('predicts from the text alone: the top tool carries the resolver confidence', async () => {
    const predictor = createPredictor({ resolver: world.resolver });
    const { predictions, retrieval, ms } = await predictor.predict(snap('To enrich these leads I will look up the web domain of each company.'), { previousTool: null });
    expect(predictions[0]).toMatchObject({ tool: 'lookup_company_domain', source: 'text', query: retrieval.intent });
    expect(predictions[0]?.confidence).toBeCloseTo(retrieval.confidence, 10);
    expect(retrieval.candidates[0]?.tool).toBe('lookup_company_domain');
    expect(ms).toBeGreaterThanOrEqual(0);
    for (let i = 1; i < predictions.length; i++) expect(predictions[i]!.confidence).toBeLessThanOrEqual(predictions[i - 1]!.confidence);
  });

  it('mixes the text with the transition prior, linearly, and says where each prediction came from', async () => {
    const transitions = tableTransitions({ lookup_company_domain: [{ tool: 'update_crm_record', p: 0.8 }, { tool: 'fetch_sales_report', p: 0.2 }] });
    const query = 'Then I will update the CRM record of the company.';
    const textOnly = await createPredictor({ resolver: world.resolver, threshold: 0 }).predict(snap(query), { previousTool: 'lookup_company_domain' });
    const mixed = await createPredictor({ resolver: world.resolver, transitions, threshold: 0, weights: { text: 0.6, transition: 0.4 } }).predict(snap(query), {
      previousTool: 'lookup_company_domain',
    });
    expect(transitions.asked).toEqual(['lookup_company_domain']);
    const text = new Map(textOnly.predictions.map((p) => [p.tool, p.confidence]));
    const crm = mixed.predictions.find((p) => p.tool === 'update_crm_record');
    expect(crm?.source).toBe('both');
    expect(crm?.confidence).toBeCloseTo(0.6 * (text.get('update_crm_record') ?? 0) + 0.4 * 0.8, 10);
    const report = mixed.predictions.find((p) => p.tool === 'fetch_sales_report');
    expect(report?.confidence).toBeCloseTo(0.6 * (text.get('fetch_sales_report') ?? 0) + 0.4 * 0.2, 10);
    // A tool the text supports and the model does not mention keeps only the text's share.
    const weather = mixed.predictions.find((p) => p.tool === 'get_weather_forecast');
    if (weather) expect(weather.confidence).toBeCloseTo(0.6 * (text.get('get_weather_forecast') ?? 0), 10);
  });

  it('lets the transition prior alone predict a tool the text does not mention', async () => {
    const transitions = tableTransitions({ update_crm_record: [{ tool: 'some_unindexed_tool', p: 1 }] });
    const { predictions } = await createPredictor({ resolver: world.resolver, transitions, threshold: 0.2 }).predict(snap('zebra quantum lullaby'), {
      previousTool: 'update_crm_record',
    });
    expect(predictions.find((p) => p.tool === 'some_unindexed_tool')).toMatchObject({ source: 'transition', confidence: 0.3 });
  });

  it('leaves the text alone when the model has no opinion', async () => {
    const transitions = tableTransitions({});
    const query = 'Let me check the weather forecast for the city.';
    const a = await createPredictor({ resolver: world.resolver }).predict(snap(query), { previousTool: null });
    const b = await createPredictor({ resolver: world.resolver, transitions }).predict(snap(query), { previousTool: null });
    expect(b.predictions).toEqual(a.predictions);
    expect(transitions.asked).toEqual([null]);
  });

  it('keeps only the top few above its threshold', async () => {
    const query = 'look up the web domain of a company, update the CRM record, fetch the sales report and get the weather forecast for a city';
    const all = await createPredictor({ resolver: world.resolver, threshold: 0, maxPredictions: 10 }).predict(snap(query), { previousTool: null });
    expect(all.predictions.length).toBeGreaterThan(2);
    const two = await createPredictor({ resolver: world.resolver, threshold: 0, maxPredictions: 2 }).predict(snap(query), { previousTool: null });
    expect(two.predictions).toEqual(all.predictions.slice(0, 2));
    const cut = all.predictions[1]!.confidence;
    const above = await createPredictor({ resolver: world.resolver, threshold: cut, maxPredictions: 10 }).predict(snap(query), { previousTool: null });
    expect(above.predictions.every((p) => p.confidence >= cut)).toBe(true);
    expect(above.predictions.length).toBeLessThan(all.predictions.length);
  });

  it('is cancelled through its signal', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(createPredictor({ resolver: world.resolver }).predict(snap('weather in Rome'), { previousTool: null, signal: controller.signal })).rejects.toThrow(/cancel/i);
  });

  it('rejects bad options with a clear error', () => {
    expectKiwiError(() => createPredictor({ resolver: world.resolver, weights: { text: -1 } }), 'INVALID_INPUT', /weight text must be a finite number/);
    expectKiwiError(() => createPredictor({ resolver: world.resolver, weights: { text: 0, transition: 0 } }), 'INVALID_INPUT', /both 0/);
    expectKiwiError(() => createPredictor({ resolver: world.resolver, threshold: 2 }), 'INVALID_INPUT', /threshold must be a number from 0 to 1/);
    expectKiwiError(() => createPredictor({ resolver: world.resolver, maxPredictions: 0 }), 'INVALID_INPUT', /maxPredictions must be an integer/);
  });
});
