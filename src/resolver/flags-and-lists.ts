/**
 * Two shapes that are not one value in the text: booleans ("without ice", "enable cropping")
 * and lists ("Paris, London and Rome").
 */
import type { Mention } from './mention.js';
import type { Context } from './param-matching.js';
import type { ParamProfile } from './param-profile.js';
import { sameStem, stem, type Token } from './text-words.js';
import { convertMention } from './value-coercion.js';

export interface Flag {
  value: boolean;
  certainty: number;
  why: string;
}

const NEGATIVE = new Set(['no', 'not', 'without', 'exclude', 'excluding', 'disable', 'disabled', 'don', 'never', 'skip', 'false', 'off', 'none', 'omit', 'non', 'nor', 'avoid', 'neither']);
const POSITIVE = new Set(['with', 'include', 'including', 'includes', 'enable', 'enabled', 'add', 'yes', 'true', 'on', 'use', 'show', 'allow', 'want', 'plus', 'should', 'must', 'do', 'please']);
const EXPLICIT = new Map<string, boolean>([['true', true], ['false', false], ['yes', true], ['no', false], ['on', true], ['off', false], ['enabled', true], ['disabled', false]]);
/** Name words that only say "this is a switch" (`include_images`: the concept is "images"). */
const SWITCH_WORDS: ReadonlySet<string> = new Set(
  'is has include enable use show allow only should flag with do to be can need want add get return fetch require'.split(' ').map(stem),
);

/** A boolean parameter's value from its concept word and the polarity words around it. */
export function readFlag(tokens: readonly Token[], p: ParamProfile, inValue: (t: Token) => boolean): Flag | undefined {
  const concept = p.name.filter((w) => !SWITCH_WORDS.has(w));
  const words = concept.length > 0 ? concept : p.name;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k] as Token;
    if (inValue(t) || !words.some((w) => sameStem(t.stem, w))) continue;
    const next = tokens[k + 1];
    const explicit = next ? EXPLICIT.get(next.lower) : undefined;
    if (explicit !== undefined) return { value: explicit, certainty: 0.95, why: `'${t.lower} ${next?.lower}'` };
    const before = tokens.slice(Math.max(0, k - 3), k).map((x) => x.lower);
    if (before.some((x) => NEGATIVE.has(x))) return { value: false, certainty: 0.9, why: `'${before.join(' ')} ${t.lower}'` };
    if (before.some((x) => POSITIVE.has(x))) return { value: true, certainty: 0.85, why: `'${before.join(' ')} ${t.lower}'` };
    return { value: true, certainty: 0.6, why: `'${t.lower}' is asked for` };
  }
  return undefined;
}

const SEPARATOR = /^\s*(?:,\s*(?:and|or|&)?|and|or|&|\/)\s*$/i;

/**
 * Grows the value chosen for an array parameter over the values of the same kind that are
 * listed with it ("Paris, London and Rome").
 */
export function extendList(ctx: Context, chosen: Mention, p: ParamProfile, taken: (m: Mention) => boolean): unknown[] {
  const text = ctx.text;
  const sameKind = ctx.mentions.filter((m) => m.kind === chosen.kind).sort((a, b) => a.start - b.start);
  const at = sameKind.indexOf(chosen);
  let first = at;
  let last = at;
  while (first > 0) {
    const prev = sameKind[first - 1] as Mention;
    if (taken(prev) || !SEPARATOR.test(text.slice(prev.end, (sameKind[first] as Mention).start))) break;
    first--;
  }
  while (last < sameKind.length - 1) {
    const next = sameKind[last + 1] as Mention;
    if (taken(next) || !SEPARATOR.test(text.slice((sameKind[last] as Mention).end, next.start))) break;
    last++;
  }
  const out: unknown[] = [];
  for (const m of sameKind.slice(first, last + 1)) {
    const c = convertMention(m, p, ctx.now);
    if (c !== undefined && Array.isArray(c.value)) out.push(...(c.value as unknown[]));
  }
  return out;
}

const LIST_INTRO = /^\s*(?:[:=]|of|are|is|including|include|such as|like|as|with|:)?\s*/i;
const ITEM = /^[\w'’ .&-]{1,40}$/;

/**
 * A list written in plain words after the parameter's name ("with ingredients tomatoes, onions
 * and garlic"), when no listed value of a known kind was found. Needs two items or more.
 */
export function plainList(text: string, tokens: readonly Token[], p: ParamProfile): { items: string[]; why: string } | undefined {
  for (const t of tokens) {
    if (!p.name.some((w) => sameStem(t.stem, w)) || stem(t.lower) === 'id') continue;
    const rest = text.slice(t.end).replace(LIST_INTRO, '');
    const clause = /^[^.;:!?\n]*/.exec(rest)?.[0] ?? '';
    const items = clause
      .split(/\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+/)
      .map((x) => x.trim().replace(/^(?:the|a|an)\s+/i, ''))
      .filter((x) => x.length > 0);
    if (items.length >= 2 && items.every((x) => ITEM.test(x) && x.split(/\s+/).length <= 4)) {
      return { items, why: `the list after '${t.lower}'` };
    }
  }
  return undefined;
}
