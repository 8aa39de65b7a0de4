/**
 * Which value goes to which parameter. Every (parameter, value) pair gets a score from the
 * evidence around the value: the parameter's name or description words just before or after
 * it ("a width of 44.8"), its listed examples, its role (a date for `start_date`, an e-mail for
 * `email`), units and prepositions ("from … to …"). Pairs are then taken best first, each value
 * and each parameter once; values of the same shape keep the schema's order when the evidence
 * does not tell them apart.
 */
import type { AddressPart, Mention, MentionKind } from './mention.js';
import { roleWords, type ParamProfile, type Role } from './param-profile.js';
import { convertUnit, unitParts } from './units.js';
import { STOPWORDS, sameStem, stem, type Token } from './text-words.js';
import { convertMention } from './value-coercion.js';
import { secretShaped } from './secret-fields.js';

export interface Scored {
  profile: ParamProfile;
  mention: Mention;
  value: unknown;
  /** base + evidence */
  score: number;
  /** What speaks for this parameter beyond the value merely fitting its type. */
  evidence: number;
  why: string;
}

export interface Context {
  text: string;
  lower: string;
  tokens: Token[];
  mentions: Mention[];
  /** For relative dates ("tomorrow") when a parameter asks for a date format. */
  now: Date;
}

interface Window {
  left: Array<{ stem: string; lower: string; dist: number }>;
  right: Array<{ stem: string; lower: string; dist: number }>;
}

const MAX_WINDOW = 5;
const BOUNDARY = /[.;!?]\s|[;!?]/;
const LOCATION_PREPS = new Set(['in', 'at', 'near', 'from', 'to', 'within', 'around', 'across', 'inside', 'outside']);
const SOURCE_PREPS = new Set(['from', 'since', 'between', 'starting', 'beginning', 'after']);
const TARGET_PREPS = new Set(['to', 'until', 'till', 'through', 'ending', 'into', 'before']);
/** Words right before a name that make it the work's maker ("directed by X") or one who appears in it ("starring X"). */
const CREATOR_CUES = new Set(['by']);
const CAST_CUES = new Set(['starring', 'featuring', 'stars', 'feat']);
/** How much such a word says about which of the two roles a name fills. */
const ROLE_CUE = 0.5;
/**
 * Roles whose words name a kind of value ("the directory", "the URL", "the host"), so that a
 * quoted value right after one is that value: `the directory "src"` is a path.
 */
const NAMING_ROLES: readonly Role[] = ['path', 'url', 'email', 'ip', 'version', 'phone'];
const REQUIRED_MIN = 0.25;
/** How clearly the words on a secret's left must name its parameter. */
const SECRET_CUE = 0.5;
const OPTIONAL_MIN_EVIDENCE = 0.5;
/** A number followed by the noun a parameter counts is as good as its name written before it. */
const COUNTED_NOUN = 0.6;
/** A value that matches a pattern ordinary words fail ("^[A-Z]{3}$") is the kind the parameter takes, though not proof it is meant. */
const PATTERN_MATCH = 0.4;

/** What a value is worth on its type alone, by kind: quoted text is meant as a value, a bare number less so. */
const BASE: Readonly<Record<MentionKind, number>> = {
  quoted: 0.4, url: 0.3, email: 0.3, ip: 0.3, path: 0.3, version: 0.3, phone: 0.3, id: 0.3, proper: 0.25,
  date: 0.2, reldate: 0.1, time: 0.2, range: 0.15, number: 0.1, json: 0.35, phrase: 0,
};

export function scorePairs(ctx: Context, profiles: readonly ParamProfile[]): Scored[] {
  // For each token, the values it lies inside; a window stops at another value (not at a phrase,
  // which is only a reading of the words that may be cues).
  const owners = ctx.tokens.map((t) => ctx.mentions.filter((o) => o.kind !== 'phrase' && t.start >= o.start && t.end <= o.end));
  const windows = ctx.mentions.map((m) => windowOf(ctx, m, owners));
  const out: Scored[] = [];
  for (const profile of profiles) {
    ctx.mentions.forEach((mention, i) => {
      const converted = convertMention(mention, profile, ctx.now);
      if (converted === undefined) return;
      const w = windows[i] as Window;
      const parts: string[] = [];
      let evidence = 0;
      const cue = cueScore(profile, w);
      // A secret goes only where it is written as a value (quoted) or named as one on its left ("token abcd1234").
      if (profile.secret && (!secretShaped(mention) || (mention.kind !== 'quoted' && cue.left < SECRET_CUE))) return;
      // Lower-case words in front of a name word are a guess at a value; a run that starts with a
      // capitalised name ("Sodium chloride chemical") is a name phrase and counts like one.
      const named = mention.modifier === true && /^[A-Z]/.test(mention.text);
      if (mention.modifier && !named) cue.score *= 0.75;
      if (cue.score > 0) {
        evidence += cue.score;
        parts.push(`near '${cue.words.join(' ')}'`);
      }
      const shape = shapeScore(profile, mention, w);
      if (shape.score !== 0) {
        evidence += shape.score;
        if (shape.why) parts.push(shape.why);
      }
      if (converted.example > 0) {
        evidence += converted.example;
        parts.push(converted.example >= 1 ? 'an allowed value' : 'one of its examples');
      }
      if (converted.patterned === true) {
        evidence += PATTERN_MATCH;
        parts.push('matches its pattern');
      }
      const numeric = profile.param.type === 'number' || profile.param.type === 'integer';
      // A guessed phrase never beats a value of its own at equal evidence, unless it is a name.
      const guessBase = named ? BASE.proper : -0.1;
      const base = numeric && mention.num !== undefined ? 0.3 : mention.modifier ? guessBase : BASE[mention.kind];
      out.push({
        profile,
        mention,
        value: converted.value,
        score: base + evidence,
        evidence,
        why: `${mention.kind} ${JSON.stringify(mention.text)}${parts.length ? ` (${parts.join(', ')})` : ''}`,
      });
    });
  }
  return out;
}

/** Best pairs first; each parameter and each stretch of text used once; then schema order for look-alikes. */
export function assign(pairs: Scored[]): Map<number, Scored> {
  const sorted = [...pairs].sort(
    (a, b) => b.score - a.score || a.profile.index - b.profile.index || a.mention.start - b.mention.start,
  );
  const chosen = new Map<number, Scored>();
  const used: Mention[] = [];
  for (const pair of sorted) {
    if (chosen.has(pair.profile.index)) continue;
    if (!acceptable(pair)) continue;
    // Listed examples may overlap ("bus" inside "bus route 10"); other values are used once.
    const phrase = pair.mention.kind === 'phrase' && !pair.mention.modifier;
    const clash = (m: Mention): boolean =>
      m.start < pair.mention.end && pair.mention.start < m.end && !(phrase && m.kind === 'phrase' && !m.modifier && (m.start !== pair.mention.start || m.end !== pair.mention.end));
    if (used.some(clash)) continue;
    chosen.set(pair.profile.index, pair);
    used.push(pair.mention);
  }
  keepSchemaOrder(chosen, pairs);
  return chosen;
}

function acceptable(pair: Scored): boolean {
  return pair.profile.param.required ? pair.score >= REQUIRED_MIN : pair.evidence >= OPTIONAL_MIN_EVIDENCE;
}

const pairKey = (index: number, m: Mention): string => `${index}:${m.start}:${m.end}:${m.kind}`;

/**
 * Two parameters that took two values of the same kind in the opposite order to the schema
 * swap them, unless the evidence clearly prefers the crossing ("to X from Y").
 */
function keepSchemaOrder(chosen: Map<number, Scored>, pairs: Scored[]): void {
  const lookup = new Map<string, Scored>();
  for (const p of pairs) lookup.set(pairKey(p.profile.index, p.mention), p);
  const entries = [...chosen.values()].sort((a, b) => a.profile.index - b.profile.index);
  for (let i = 0; i < entries.length; i++) {
    for (let j = i + 1; j < entries.length; j++) {
      const a = entries[i] as Scored;
      const b = entries[j] as Scored;
      // Values of one kind, or two values both chosen on type alone, follow the schema's order.
      const guesses = a.evidence < 0.2 && b.evidence < 0.2;
      if (a.mention.start < b.mention.start || (a.mention.kind !== b.mention.kind && !guesses)) continue;
      const ab = lookup.get(pairKey(a.profile.index, b.mention));
      const ba = lookup.get(pairKey(b.profile.index, a.mention));
      // Both parameters were already judged worth filling; the swap only decides which gets which.
      if (!ab || !ba) continue;
      if (ab.score + ba.score < a.score + b.score - 0.25) continue;
      chosen.set(a.profile.index, ab);
      chosen.set(b.profile.index, ba);
      entries[i] = ab;
      entries[j] = ba;
    }
  }
}

/** Words before (up to the previous value or clause end) and after a value, by distance. */
function windowOf(ctx: Context, m: Mention, owners: ReadonlyArray<readonly Mention[]>): Window {
  const left: Window['left'] = [];
  const right: Window['right'] = [];
  const inOther = (i: number): boolean => (owners[i] ?? []).some((o) => o !== m);
  let idx = ctx.tokens.findIndex((t) => t.start >= m.start);
  if (idx < 0) idx = ctx.tokens.length;
  let dist = 1;
  let prevStart = m.start;
  for (let i = idx - 1; i >= 0 && dist <= MAX_WINDOW; i--) {
    const t = ctx.tokens[i] as Token;
    if (t.end > m.start) continue;
    if (BOUNDARY.test(ctx.text.slice(t.end, prevStart)) || inOther(i)) break;
    left.push({ stem: t.stem, lower: t.lower, dist });
    if (!STOPWORDS.has(t.lower)) dist++;
    prevStart = t.start;
  }
  dist = 1;
  let prevEnd = m.end;
  for (let i = idx; i < ctx.tokens.length && dist <= 3; i++) {
    const t = ctx.tokens[i] as Token;
    if (t.start < m.end) continue;
    if (BOUNDARY.test(ctx.text.slice(prevEnd, t.start)) || inOther(i)) break;
    right.push({ stem: t.stem, lower: t.lower, dist });
    if (!STOPWORDS.has(t.lower)) dist++;
    prevEnd = t.end;
  }
  return { left, right };
}

function cueScore(p: ParamProfile, w: Window): { score: number; left: number; words: string[] } {
  const words: string[] = [];
  const side = (ws: Window['left'], factor: number): number => {
    let sum = 0;
    let best = 0;
    for (const n of p.name) {
      let wt = 0;
      for (const t of ws) {
        if (sameStem(t.stem, n)) {
          const x = 1 / (1 + 0.35 * (t.dist - 1));
          if (x > wt) wt = x;
          if (!words.includes(t.lower)) words.push(t.lower);
        }
      }
      sum += wt;
      if (wt > best) best = wt;
    }
    let desc = 0;
    for (const t of ws) {
      if (t.dist <= 3 && !STOPWORDS.has(t.lower) && p.desc.has(t.stem)) {
        desc += 0.12 / t.dist;
        if (!words.includes(t.lower)) words.push(t.lower);
      }
    }
    // The closest name word counts fully; each further one adds, each one absent costs a little.
    const unmatched = p.name.filter((n) => !ws.some((t) => sameStem(t.stem, n))).length;
    const name = best > 0 ? Math.max(best * 0.5, best + 0.25 * (sum - best) - 0.1 * unmatched) : 0;
    return factor * (name + Math.min(desc, 0.25));
  };
  const left = side(w.left, 1);
  return { score: Math.max(left, side(w.right, 0.6)), left, words };
}

function shapeScore(p: ParamProfile, m: Mention, w: Window): { score: number; why: string } {
  const kind = m.kind === 'quoted' ? (m.inner ?? 'quoted') : m.kind;
  const r = p.roles;
  const near = w.left.filter((t) => t.dist <= 1).map((t) => t.lower);
  let score = 0;
  const why: string[] = [];
  const add = (x: number, reason: string): void => {
    score += x;
    if (reason && x > 0) why.push(reason);
  };
  if (kind === 'email' && r.has('email')) add(0.8, 'an e-mail address');
  if (kind === 'url') add(r.has('url') ? 0.8 : r.has('path') ? 0.5 : 0, 'a URL');
  if (kind === 'path') add(r.has('path') ? 0.8 : r.has('url') ? 0.3 : 0, 'a path');
  if (kind === 'ip' && r.has('ip')) add(0.5, 'an IP address');
  if (m.kind === 'quoted') {
    const noun = w.left.find((t) => !STOPWORDS.has(t.lower));
    const role = noun?.dist === 1 ? NAMING_ROLES.find((x) => r.has(x) && roleWords(x).has(noun.stem)) : undefined;
    if (noun !== undefined && role !== undefined) add(0.5, `the ${role} named by '${noun.lower}'`);
  }
  if (kind === 'date') add(r.has('date') ? 0.8 : 0, 'a date');
  // "3 days" for `days`: the noun says what is counted, which outweighs the date role.
  else if (r.has('date') && kind !== 'reldate' && kind !== 'time' && kind !== 'quoted' && !countsUnit(p, m)) add(-0.3, '');
  if (kind === 'reldate' && r.has('date')) add(0.5, 'a relative date');
  if (kind === 'time') add(r.has('time') ? 0.7 : r.has('date') ? 0.3 : 0, 'a time');
  if (kind === 'version' && r.has('version')) add(0.8, 'a version');
  if (kind === 'phone' && r.has('phone')) add(0.8, 'a phone number');
  // An amount of money is never an identifier; a text parameter for an amount takes it as a number would.
  // (The name's last word must say money: a `paymentMethod` is a method.)
  if (m.money === true && p.param.type !== 'number' && p.param.type !== 'integer') add(namesMoney(p) ? 0.5 : r.has('id') ? -0.3 : 0, 'an amount of money');
  else if (r.has('id') && (kind === 'id' || (kind === 'number' && p.param.type !== 'number'))) add(0.4, 'an identifier');
  else if (r.has('id') && kind === 'quoted') add(0.2, '');
  if (m.part !== undefined) {
    const part = addressPartScore(p, m.part);
    add(part, part > 0 ? `the ${m.part} of an address` : '');
  }
  const name = m.kind === 'proper' || (m.modifier === true && /^[A-Z]/.test(m.text));
  if (name || m.kind === 'phrase') {
    if (r.has('location') && near.some((x) => LOCATION_PREPS.has(x))) add(0.35, `a place after '${near.join(' ')}'`);
    else if (r.has('location') && name) add(0.1, '');
    if (r.has('name') && name) add(0.15, '');
  }
  if (m.num === undefined || m.kind === 'quoted') {
    const by = near.some((x) => CREATOR_CUES.has(x));
    const starring = near.some((x) => CAST_CUES.has(x));
    if (r.has('creator')) add(by ? ROLE_CUE : starring ? -ROLE_CUE : 0, `a maker after '${near.join(' ')}'`);
    else if (r.has('cast')) add(starring ? ROLE_CUE : by ? -ROLE_CUE : 0, `one who appears, after '${near.join(' ')}'`);
  }
  if (m.num !== undefined && (p.param.type === 'number' || p.param.type === 'integer')) {
    // "5 commits" for "How many commits", "2 years" for `years` (no calendar year).
    const counted = countsUnit(p, m);
    const yearLike = Number.isInteger(m.num) && m.num >= 1000 && m.num <= 2200 && (m.unit === undefined || unitParts(m.unit).length === 0);
    if (counted) add(COUNTED_NOUN, `counts ${m.unit}`);
    else if (r.has('year')) add(yearLike ? 0.7 : -0.3, yearLike ? 'a year' : '');
    if (m.money) add(r.has('money') ? 0.5 : -0.1, 'an amount of money');
    if (m.percent) add(r.has('percent') ? 0.5 : 0, 'a percentage');
    if (m.unit !== undefined && !counted) {
      const units = unitParts(m.unit);
      if (units.length > 0 && p.units.size > 0) {
        const converted = units.length === 1 && units[0] !== undefined ? convertUnit(m.num, units[0], p.units) : undefined;
        if (units.every((u) => p.units.has(u))) add(0.5, `in ${m.unit}`);
        else if (converted) add(0.4, `${m.written ?? m.unit} in ${converted.unit}s`);
        else add(-0.3, '');
      }
    }
  }
  if (near.some((x) => SOURCE_PREPS.has(x))) {
    if (r.has('source')) add(0.3, `after '${near.join(' ')}'`);
    else if (r.has('target')) add(-0.15, '');
  }
  if (near.some((x) => TARGET_PREPS.has(x))) {
    if (r.has('target')) add(0.3, `after '${near.join(' ')}'`);
    else if (r.has('source')) add(-0.15, '');
  }
  return { score, why: why.join(', ') };
}

/**
 * A part of an address for the parameter that asks for that part; the whole address for one that
 * asks for an address and no part of it; a part where another part is asked for, never.
 */
function addressPartScore(p: ParamProfile, part: AddressPart): number {
  const asked = p.addressParts;
  if (part === 'address') return asked.size === 0 && p.roles.has('location') ? 0.8 : asked.size > 0 ? -1 : 0;
  if (asked.has(part)) return 1;
  return asked.size > 0 ? -1 : 0;
}

function namesMoney(p: ParamProfile): boolean {
  const head = p.name[p.name.length - 1];
  return head !== undefined && roleWords('money').has(head);
}

/** Whether a number's following noun is one the numeric parameter counts ("3 days" for `days`). */
function countsUnit(p: ParamProfile, m: Mention): boolean {
  if (m.num === undefined || m.unit === undefined || (p.param.type !== 'number' && p.param.type !== 'integer')) return false;
  const counts = (word: string): boolean => [...p.counts].some((c) => sameStem(stem(word), c));
  if (counts(m.unit)) return true;
  // The noun may stand after a word or two that describe it ("5 interesting facts"), not after a preposition ("3 rooms for 2 days").
  for (const word of (m.words ?? []).slice(1)) {
    if (STOPWORDS.has(word)) return false;
    if (counts(word)) return true;
  }
  return false;
}
