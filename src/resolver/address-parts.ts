/**
 * Postal addresses written on one line ("123 Main St, Apt 4B, New York, NY 10001"): the whole
 * address, and its parts (street line, apartment or suite, city, state, ZIP), each marked with
 * the part it is, so that `addressLine1`, `city` or `zipCode` each take theirs and a single
 * `address` takes the whole. Read only where a street line (a number, words, a street word)
 * starts it; the quantifiers are bounded, so a long text costs one pass.
 */
import type { AddressPart, Mention } from './mention.js';

const STREET_WORDS = 'Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Way|Court|Ct|Place|Pl|Parkway|Pkwy|Highway|Hwy|Terrace|Circle|Cir|Square|Sq|Trail|Plaza';
const ADDRESS = new RegExp(
  [
    `(?<![\\w-])(?<street>\\d{1,6}[ \\t]+(?:[A-Z0-9][\\w'-]*\\.?[ \\t]+){0,4}(?:${STREET_WORDS})\\b\\.?)`,
    `(?:,?[ \\t]*(?<unit>(?:Apt|Apartment|Suite|Ste|Unit|Floor|Room|#)\\.?[ \\t]*#?[A-Za-z0-9-]{1,8}))?`,
    `(?:,[ \\t]*(?<city>[A-Z][a-z]+(?:[ \\t]+[A-Z][a-z]+){0,3}))?`,
    `(?:,[ \\t]*(?<state>[A-Z]{2})(?![\\w]))?`,
    `(?:,?[ \\t]*(?<zip>\\d{5}(?:-\\d{4})?)(?![\\w-]))?`,
  ].join(''),
  'g',
);

/** Words in a parameter's name or description that ask for one part of an address. */
const PART_WORDS: ReadonlyArray<readonly [AddressPart, RegExp]> = [
  ['street', /\bstreet\b|\baddress\s*line\s*1\b|\bline\s*1\b|\baddress1\b/i],
  ['unit', /\bapartment\b|\bsuite\b|\baddress\s*line\s*2\b|\bline\s*2\b|\baddress2\b/i],
  ['city', /\bcity\b|\btown\b/i],
  ['state', /\bstate\b|\bprovince\b/i],
  ['zip', /\bzip\b|\bpostal\b|\bpost\s*code\b|\bpostcode\b|\bzip\s*code\b/i],
];

/** The parts of an address a parameter asks for, read from its name (split into words) and description. */
export function addressPartsAsked(nameWords: readonly string[], description: string): Set<AddressPart> {
  const text = `${nameWords.join(' ')} ${description}`;
  const out = new Set<AddressPart>();
  for (const [part, re] of PART_WORDS) if (re.test(text)) out.add(part);
  return out;
}

/** Whole addresses with a part besides the street, and each of their parts. */
export function addressMentions(text: string): Mention[] {
  const out: Mention[] = [];
  ADDRESS.lastIndex = 0;
  for (let m = ADDRESS.exec(text); m !== null; m = ADDRESS.exec(text)) {
    const g = m.groups ?? {};
    if (g['unit'] === undefined && g['city'] === undefined && g['zip'] === undefined) continue;
    let from = m.index;
    for (const part of ['street', 'unit', 'city', 'state', 'zip'] as const) {
      const value = g[part];
      if (value === undefined) continue;
      const start = text.indexOf(value, from);
      from = start + value.length;
      const mention: Mention = { kind: part === 'zip' ? 'number' : 'proper', start, end: from, text: value, part };
      if (part === 'zip') mention.num = Number(value.slice(0, 5));
      out.push(mention);
    }
    out.push({ kind: 'proper', start: m.index, end: m.index + m[0].length, text: m[0], part: 'address' });
  }
  return out;
}
