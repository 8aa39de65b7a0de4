import { describe, expect, it } from 'vitest';
import { asciiSpelling, checkToolName } from '../../src/registry/tool-name.js';

function rejected(name: string): { reason: string; suggestion?: string } {
  const result = checkToolName(name);
  if (result.ok) throw new Error(`expected ${JSON.stringify(name)} to be rejected`);
  return result;
}

describe('checkToolName', () => {
  it('accepts ASCII ids made of letters, digits, "_", "." and "-"', () => {
    for (const name of ['weather', 'weather_forecast', 'files.directory_tree', 'a-b', 'X1', 'a'.repeat(128)]) {
      expect(checkToolName(name)).toEqual({ ok: true });
    }
  });

  it('names a Cyrillic look-alike by code point and suggests the ASCII spelling', () => {
    const result = rejected('w\u0435ather');
    expect(result.reason).toContain('U+0435 CYRILLIC SMALL LETTER IE');
    expect(result.reason).toContain('looks like "e"');
    expect(result.reason).toContain('position 2');
    expect(result.suggestion).toBe('weather');
  });

  it('names a Greek look-alike', () => {
    const result = rejected('g\u03bfogle');
    expect(result.reason).toContain('U+03BF GREEK SMALL LETTER OMICRON');
    expect(result.suggestion).toBe('google');
  });

  it('maps fullwidth letters through NFKC', () => {
    const result = rejected('\uff57eather');
    expect(result.reason).toContain('U+FF57');
    expect(result.reason).toContain('fullwidth');
    expect(result.suggestion).toBe('weather');
  });

  it('calls out zero-width characters as invisible and drops them in the suggestion', () => {
    const result = rejected('read\u200bfile');
    expect(result.reason).toContain('U+200B ZERO WIDTH SPACE');
    expect(result.reason).toContain('invisible');
    expect(result.suggestion).toBe('readfile');
  });

  it('suggests the base letter for accented Latin letters', () => {
    expect(rejected('caf\u00e9').suggestion).toBe('cafe');
  });

  it('rejects spaces, slashes and empty ids without inventing a suggestion', () => {
    expect(rejected('').reason).toContain('empty');
    const slash = rejected('tools/read');
    expect(slash.reason).toContain('U+002F');
    expect(slash.suggestion).toBeUndefined();
    expect(rejected('read file').reason).toContain('U+0020');
  });

  it('rejects ids longer than 128 characters', () => {
    expect(rejected('a'.repeat(129)).reason).toContain('limit is 128');
  });

  it('has no suggestion for scripts without a Latin spelling', () => {
    expect(asciiSpelling('\u5929\u6c14')).toBeUndefined();
    expect(rejected('\u5929\u6c14').suggestion).toBeUndefined();
  });
});
