import { describe, expect, it } from 'vitest';
import { argumentMatches, callMatches, valueMatches } from '../../src/resolver/score-call.js';

const gold = { name: 'getWeather', arguments: { city: ['Paris', 'Paris, France'], days: [3] } };

describe('callMatches', () => {
  it('needs the right tool', () => {
    expect(callMatches(gold, { tool: 'getForecast', arguments: { city: 'Paris', days: 3 } })).toBe(false);
    expect(callMatches(gold, { tool: 'getWeather', arguments: { city: 'Paris', days: 3 } })).toBe(true);
  });

  it('accepts any one of the listed values and rejects others', () => {
    expect(callMatches(gold, { tool: 'getWeather', arguments: { city: 'Paris, France', days: 3 } })).toBe(true);
    expect(callMatches(gold, { tool: 'getWeather', arguments: { city: 'paris', days: 3 } })).toBe(false);
  });

  it('fails when a gold parameter is left out, unless "" is among its values', () => {
    expect(callMatches(gold, { tool: 'getWeather', arguments: { city: 'Paris' } })).toBe(false);
    const optional = { name: 'getWeather', arguments: { city: ['Paris'], days: ['', 3] } };
    expect(callMatches(optional, { tool: 'getWeather', arguments: { city: 'Paris' } })).toBe(true);
    expect(callMatches(optional, { tool: 'getWeather', arguments: { city: 'Paris', days: 3 } })).toBe(true);
    expect(callMatches(optional, { tool: 'getWeather', arguments: { city: 'Paris', days: 4 } })).toBe(false);
  });

  it('fails an argument outside the schema when the schema is given, and allows extra schema parameters', () => {
    const schema = ['city', 'days', 'units'];
    expect(callMatches(gold, { tool: 'getWeather', arguments: { city: 'Paris', days: 3, units: 'metric' } }, { schema })).toBe(true);
    expect(callMatches(gold, { tool: 'getWeather', arguments: { city: 'Paris', days: 3, lang: 'fr' } }, { schema })).toBe(false);
    // Without the schema that rule cannot be checked.
    expect(callMatches(gold, { tool: 'getWeather', arguments: { city: 'Paris', days: 3, lang: 'fr' } })).toBe(true);
  });

  it('checks only the name when the gold arguments are null', () => {
    expect(callMatches({ name: 'search', arguments: null }, { tool: 'search', arguments: { anything: 1 } })).toBe(true);
    expect(callMatches({ name: 'search', arguments: null }, { tool: 'other', arguments: {} })).toBe(false);
  });

  it('treats an argument set to undefined as left out', () => {
    expect(argumentMatches([''], { days: undefined }, 'days')).toBe(true);
    expect(argumentMatches([3], { days: undefined }, 'days')).toBe(false);
  });
});

describe('valueMatches', () => {
  it('compares numbers by value, also against a string that spells a number', () => {
    expect(valueMatches(5, 5.0)).toBe(true);
    expect(valueMatches('19.0', 19)).toBe(true);
    expect(valueMatches(19, ' 19 ')).toBe(true);
    expect(valueMatches('19.5', 19)).toBe(false);
    expect(valueMatches('19 kg', 19)).toBe(false);
    expect(valueMatches(Number.NaN, Number.NaN)).toBe(false);
  });

  it('compares strings exactly after trimming', () => {
    expect(valueMatches(' Paris ', 'Paris')).toBe(true);
    expect(valueMatches('Paris', 'paris')).toBe(false);
    expect(valueMatches('5.0', '5')).toBe(false);
  });

  it('compares booleans, also against "true"/"false" in any case', () => {
    expect(valueMatches(true, true)).toBe(true);
    expect(valueMatches('True', true)).toBe(true);
    expect(valueMatches(false, 'true')).toBe(false);
    expect(valueMatches(false, 0)).toBe(false);
  });

  it('compares arrays in order and objects by keys, structurally', () => {
    expect(valueMatches([1, 'a'], [1.0, 'a'])).toBe(true);
    expect(valueMatches([1, 2], [2, 1])).toBe(false);
    expect(valueMatches([1], [1, 1])).toBe(false);
    expect(valueMatches({ a: 1, b: [2] }, { b: [2], a: '1' })).toBe(true);
    expect(valueMatches({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(valueMatches({ a: 1 }, [1])).toBe(false);
  });

  it('compares null only with null', () => {
    expect(valueMatches(null, null)).toBe(true);
    expect(valueMatches(null, '')).toBe(false);
    expect(valueMatches(null, 0)).toBe(false);
  });

  it('does not recurse without bound', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = [deep];
    expect(valueMatches(deep, deep)).toBe(false);
  });
});
