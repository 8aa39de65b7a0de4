/**
 * Values read as people write them (issue 26): the filler's readings beyond the plain ones in
 * fill-args.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { ToolParameter } from '../../src/registry/types.js';
import { fillArguments } from '../../src/resolver/fill-args.js';
import { makeTool } from '../helpers/make-tool.js';

type P = Partial<ToolParameter> & Pick<ToolParameter, 'name'>;
const tool = (...parameters: P[]) =>
  makeTool({ id: 'test_tool', parameters: parameters.map((p) => ({ type: 'string', required: false, ...p }) as ToolParameter) });
const fill = (intent: string, ...parameters: P[]) => fillArguments(intent, tool(...parameters));

describe('names that are not values', () => {
  it('never takes "I\'m", "I\'d" or "API" for a name', () => {
    const state: P = { name: 'state', required: true, description: 'The state of the address' };
    expect(fill("I'm moving soon, check it", state).arguments).toEqual({});
    expect(fill("I'd like the currency API to help", { name: 'base', required: true }).arguments).toEqual({});
  });

  it('reads a capitalised parameter name as the cue for the value beside it, not as a value', () => {
    const r = fill('Pay with my card, expiry date is 12/25, CVV is 123.', { name: 'cvv', required: true });
    expect(r.arguments).toEqual({ cvv: '123' });
  });
});

describe('phone numbers', () => {
  it('reads a phone number that ends the sentence', () => {
    expect(fill('Activate the SIM for my number 123-456-7890.', { name: 'phoneNumber', required: true }).arguments).toEqual({ phoneNumber: '123-456-7890' });
    expect(fill('Call 123-456-7890.5 now', { name: 'phoneNumber', required: true }).arguments).not.toEqual({ phoneNumber: '123-456-7890' });
  });
});
