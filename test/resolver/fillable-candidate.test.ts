import { describe, expect, it } from 'vitest';
import type { Tool, ToolParameter } from '../../src/registry/types.js';
import { fillArguments } from '../../src/resolver/fill-args.js';
import { fillableRunnerUp } from '../../src/resolver/fillable-candidate.js';
import { createResolver } from '../../src/resolver/resolver.js';
import type { Candidate, Retrieval } from '../../src/resolver/types.js';
import { createHashEmbedder } from '../helpers/hash-embedder.js';
import { makeTool } from '../helpers/make-tool.js';

const param = (name: string, extra: Partial<ToolParameter> = {}): ToolParameter => ({ name, type: 'string', required: true, ...extra });

const TOOLS: Tool[] = [
  makeTool({ id: 'pay_bill', type: 'api', description: 'Pay a bill', parameters: [param('bill_id', { description: 'The bill ID' }), param('payment_amount', { type: 'number', description: 'Amount to pay' })] }),
  makeTool({ id: 'get_bill', type: 'api', description: 'Get the details of a bill', parameters: [param('bill_id', { description: 'The bill ID' })] }),
  makeTool({ id: 'renew_policy', type: 'api', description: 'Renew a policy', parameters: [param('policy_id', { description: 'The policy ID' }), param('renewal_details')] }),
  makeTool({ id: 'get_policy', type: 'api', description: 'Get a policy', parameters: [param('policy_id', { description: 'The policy ID' })] }),
  makeTool({ id: 'bill_overview', type: 'api', description: 'Every bill at a glance', parameters: [] }),
  makeTool({ id: 'bill_by_default', type: 'api', description: 'Bills of the default account', parameters: [param('account', { default: 'main' })] }),
];
const byId = new Map(TOOLS.map((t) => [t.id, t]));

function search(intent: string, candidates: Candidate[]) {
  return fillableRunnerUp({ intent, candidates, targetOf: (c) => byId.get(c.tool), fill: (tool) => fillArguments(intent, tool), threshold: 0.55 });
}

describe('fillableRunnerUp', () => {
  it('takes the close runner-up whose whole call the intent fills, where the first lacks a value', async () => {
    const found = await search('show me bill ID BILL002', [{ tool: 'pay_bill', score: 0.74 }, { tool: 'get_bill', score: 0.7 }]);
    expect(found).toMatchObject({ rank: 2, tool: { id: 'get_bill' }, filled: { arguments: { bill_id: 'BILL002' }, missing: [] } });
  });

  it('keeps the first when the intent writes a word of its name the runner-up lacks', async () => {
    expect(await search('renew my policy with policy ID POLICY456', [{ tool: 'renew_policy', score: 0.78 }, { tool: 'get_policy', score: 0.75 }])).toBeUndefined();
  });

  it('passes over a runner-up too far below the first, or below the threshold', async () => {
    expect(await search('show me bill ID BILL002', [{ tool: 'pay_bill', score: 0.8 }, { tool: 'get_bill', score: 0.7 }])).toBeUndefined();
    expect(await search('show me bill ID BILL002', [{ tool: 'pay_bill', score: 0.58 }, { tool: 'get_bill', score: 0.54 }])).toBeUndefined();
  });

  it('never prefers a tool that any intent fills: no required value, or only defaulted ones', async () => {
    expect(await search('show me bill ID BILL002', [{ tool: 'pay_bill', score: 0.74 }, { tool: 'bill_overview', score: 0.73 }, { tool: 'bill_by_default', score: 0.72 }])).toBeUndefined();
  });

  it('passes over a runner-up the intent does not fill either, and a directive or knowledge entry', async () => {
    expect(await search('show me my bills', [{ tool: 'pay_bill', score: 0.74 }, { tool: 'get_bill', score: 0.73 }])).toBeUndefined();
    expect(await search('show me bill ID BILL002', [{ tool: 'pay_bill', score: 0.74 }, { tool: 'get_bill', score: 0.73, item: 'directive' }])).toBeUndefined();
  });
});

describe('the resolver prefers the candidate the intent fills', () => {
  const resolver = createResolver({ tools: byId, search: { searchVector: async () => [], searchText: async () => [] }, embedder: createHashEmbedder({ dimensions: 8 }), settings: { targetPrecision: 0 } });
  const retrieval = (intent: string, candidates: Candidate[]): Retrieval => ({ intent, candidates, confidence: Math.min(1, 2 * (candidates[0]?.score ?? 0) - (candidates[1]?.score ?? 0)), timings: { embedMs: 0, searchMs: 0, totalMs: 0 } });

  it('calls the runner-up at its own score less the first lead, first in the candidates', async () => {
    const intent = 'show me bill ID BILL002';
    const r = await resolver.complete(intent, retrieval(intent, [{ tool: 'pay_bill', score: 0.74 }, { tool: 'get_bill', score: 0.7 }]));
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'get_bill', arguments: { bill_id: 'BILL002' } } });
    // 0.70 less the first's lead of 0.04, times how sure the filler is of the value.
    expect(r.confidence).toBeCloseTo(0.66 * fillArguments(intent, byId.get('get_bill') as Tool).confidence, 6);
    expect(r.candidates.map((c) => c.tool)).toEqual(['get_bill', 'pay_bill']);
    expect(r.notes.some((n) => n.includes('`pay_bill` lacks `payment_amount`'))).toBe(true);
  });

  it('asks back for the first when the intent names what it does, and when the intent names a tool', async () => {
    const intent = 'renew my policy with policy ID POLICY456';
    expect(await resolver.complete(intent, retrieval(intent, [{ tool: 'renew_policy', score: 0.78 }, { tool: 'get_policy', score: 0.75 }]))).toMatchObject({ status: 'unresolved', stop: 'arguments', missing: ['renewal_details'] });
    const named = 'use `pay_bill` for bill ID BILL002';
    expect(await resolver.complete(named, retrieval(named, [{ tool: 'get_bill', score: 0.74 }, { tool: 'pay_bill', score: 0.7 }]))).toMatchObject({ status: 'unresolved', missing: ['payment_amount'] });
  });
});
