import { describe, expect, it } from 'vitest';
import type { ToolParameter } from '../../src/registry/types.js';
import { containsWords, numbersIn, valueEvidence } from '../../src/resolver/value-evidence.js';

const p = (extra: Partial<ToolParameter> = {}): ToolParameter => ({ name: 'x', type: 'string', required: true, ...extra });
const text = { intent: 'Book a table for 4 at Café  Rouge on 2024-06-20, near New York', context: 'we said the budget is 1,200 dollars' };

describe('valueEvidence', () => {
  it('finds what the intent spells out, whatever the case, spacing or Unicode form', () => {
    expect(valueEvidence('café rouge', p(), text)).toEqual({ score: 1, how: 'in the intent' });
    expect(valueEvidence('New York', p(), text).score).toBe(1);
    expect(valueEvidence('2024-06-20', p(), text).score).toBe(1);
    expect(valueEvidence(4, p({ type: 'integer' }), text).score).toBe(1);
    expect(valueEvidence('4', p(), text).score).toBe(1);
  });

  it('counts the conversation for less than the intent', () => {
    expect(valueEvidence(1200, p({ type: 'number' }), text)).toEqual({ score: 0.7, how: 'in the conversation' });
    expect(valueEvidence('budget', p(), text).score).toBe(0.7);
  });

  it('calls a value the text does not hold a guess, part of a word included', () => {
    expect(valueEvidence('Paris', p(), text)).toEqual({ score: 0, how: '"Paris" is not in the intent' });
    expect(valueEvidence('York City', p(), text).score).toBe(0);
    expect(valueEvidence('Rou', p(), text).score).toBe(0);
    expect(valueEvidence(2, p({ type: 'integer' }), text).score).toBe(0);
    expect(valueEvidence('', p(), text).score).toBe(0);
    expect(valueEvidence({ nested: { fn: 'f' } }, p({ type: 'object' }), text).score).toBe(0);
  });

  it('weighs a default, a reading the rules share, a yes/no and an unnamed enum member below a stated value', () => {
    expect(valueEvidence('metric', p({ default: 'metric' }), text)).toEqual({ score: 0.8, how: 'the schema default' });
    expect(valueEvidence('2024-06-20T00:00', p(), text, '2024-06-20T00:00')).toEqual({ score: 0.9, how: 'as the rules read it' });
    expect(valueEvidence(true, p({ type: 'boolean' }), text).score).toBe(0.6);
    expect(valueEvidence('imperial', p({ enum: ['metric', 'imperial'] }), text).score).toBe(0.5);
  });

  it('takes the weakest part of a list or an object', () => {
    expect(valueEvidence(['New York', 'Café Rouge'], p({ type: 'array' }), text).score).toBe(1);
    expect(valueEvidence(['New York', 'Boston'], p({ type: 'array' }), text).score).toBe(0);
    expect(valueEvidence({ city: 'New York', people: 4 }, p({ type: 'object' }), text).score).toBe(1);
    expect(valueEvidence({ city: 'New York', people: 4, budget: 1200 }, p({ type: 'object' }), text).score).toBe(0.7);
  });

  it('stops at a depth no sentence describes', () => {
    let deep: unknown = 'New York';
    for (let i = 0; i < 20; i++) deep = [deep];
    expect(valueEvidence(deep, p({ type: 'array' }), text).score).toBe(0);
  });
});

describe('containsWords and numbersIn', () => {
  it('match whole words and numbers only', () => {
    expect(containsWords('ids 15 and 7', '5')).toBe(false);
    expect(containsWords('ids 15 and 7', '7')).toBe(true);
    expect(containsWords('x', '')).toBe(false);
    expect(numbersIn('pay 1,200.50 or -3 and 7')).toEqual([1200.5, -3, 7]);
  });

  it('stay linear on long adversarial text', () => {
    const long = 'a'.repeat(100_000);
    expect(containsWords(long, 'a'.repeat(50))).toBe(false);
    expect(numbersIn('1,'.repeat(50_000)).length).toBe(50_000);
  });
});
