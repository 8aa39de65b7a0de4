/**
 * Fills a chosen tool's arguments from the intent text, without a model: explicit `key=value`
 * hints first, then the values the text spells out (quoted strings, numbers with units, dates,
 * identifiers, names, listed examples) matched to parameters by type and by the words around
 * them. Optional parameters are set only on evidence; nothing is invented; a required
 * parameter without a value is reported as missing (or takes the schema's default).
 */
import type { Tool } from '../registry/types.js';
import { readHints } from './explicit-hints.js';
import { extractMentions } from './extract-values.js';
import type { Mention } from './mention.js';
import { extendList, plainList, readFlag } from './flags-and-lists.js';
import { assign, scorePairs, type Context, type Scored } from './param-matching.js';
import { isTextual, profileParameters, type ParamProfile } from './param-profile.js';
import { sameStem, splitName, stem, tokenize, type Token } from './text-words.js';
import { buildObject, fieldGroups, fieldPairAcceptable } from './object-parts.js';
import { currencyMentions, exampleMentions, neighbourMentions } from './phrase-mentions.js';
import { setOwn } from '../base/plain-object.js';

export interface FilledArguments {
  arguments: Record<string, unknown>;
  /** Required parameters with no value found (and no default). */
  missing: string[];
  /** 0..1: how sure the filler is about the values it chose (1 when every value came from an explicit hint or quote). */
  confidence: number;
  notes: string[];
}

export interface FillOptions {
  /** Recent conversation text: read only for required parameters the intent leaves out. */
  context?: string;
  /** "Today" for relative dates, used only where a parameter asks for a date format (default: the clock). */
  now?: Date;
}

/** Longer intents are cut here; an intent is a sentence or two, and the cost must stay bounded. */
export const MAX_INTENT_CHARS = 4096;
const CONTEXT_FACTOR = 0.7;
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;

export function fillArguments(intent: string, tool: Tool, options: FillOptions = {}): FilledArguments {
  const profiles = profileParameters(tool.parameters);
  const result: FilledArguments = { arguments: {}, missing: [], confidence: 1, notes: [] };
  if (profiles.length === 0) return result;
  const certainty: number[] = [];
  const set = (p: ParamProfile, value: unknown, sure: number, note: string): void => {
    setOwn(result.arguments, p.param.name, value);
    certainty.push(Math.max(0, Math.min(1, sure)));
    result.notes.push(`${p.param.name}: ${note}`);
  };

  const text = clean(intent);
  if (intent.length > MAX_INTENT_CHARS) result.notes.push(`intent cut to its first ${MAX_INTENT_CHARS} characters`);
  const now = options.now ?? new Date();
  fillFrom(text, profiles, set, 1, true, result.notes, now);

  const open = (p: ParamProfile): boolean => p.param.required && !Object.hasOwn(result.arguments, p.param.name);
  if (options.context !== undefined && profiles.some(open)) {
    fillFrom(clean(options.context), profiles.filter(open), set, CONTEXT_FACTOR, false, result.notes, now);
  }
  for (const p of profiles) {
    if (!open(p)) continue;
    // A default its own enum does not list (imported catalogs have them) would fail the call's check: not used.
    if (p.param.default !== undefined && (p.param.enum === undefined || p.param.enum.some((v) => v === p.param.default))) set(p, p.param.default, 0.8, 'the schema default');
    else result.missing.push(p.param.name);
  }
  result.confidence = certainty.length > 0 ? round(Math.min(...certainty)) : profiles.some((p) => p.param.required) ? 0 : 1;
  return result;
}

type Setter = (p: ParamProfile, value: unknown, certainty: number, note: string) => void;

/**
 * One pass over one text for the given parameters. `fromIntent` false (conversation context)
 * accepts only values with evidence for the parameter, never a value that merely fits its type.
 */
function fillFrom(text: string, profiles: ParamProfile[], set: Setter, factor: number, fromIntent: boolean, notes: string[], now: Date): void {
  const where = fromIntent ? '' : ' (from the context)';
  const all = extractMentions(text);
  // `key: value` inside quoted text is part of that text, not a hint.
  const quotedKey = (start: number): boolean => all.some((m) => m.kind === 'quoted' && m.start < start && start < m.end);
  const read = readHints(text, profiles);
  const hints = read.hints.filter((h) => !quotedKey(h.start));
  for (const r of read.rejected) notes.push(`ignored hint ${r}`);
  const done = new Set<number>();
  for (const h of hints) {
    set(h.profile, h.value, factor, `from the hint ${JSON.stringify(h.raw)}${where}`);
    done.add(h.profile.index);
  }
  const inHint = (start: number, end: number): boolean => hints.some((h) => start < h.end && h.start < end);
  const rest = profiles.filter((p) => !done.has(p.index));
  if (rest.length === 0) return;
  const tokens = tokenize(text);
  const found = all.filter((m) => !inHint(m.start, m.end) && !onlyNameWords(m, tokens, profiles));
  const phrases = [...exampleMentions(text, tokens, rest, found), ...neighbourMentions(text, tokens, rest, found), ...currencyMentions(text, rest, found)];
  const mentions = [...found, ...phrases.filter((m) => !inHint(m.start, m.end))].sort((a, b) => a.start - b.start || b.end - a.end);
  const ctx: Context = { text, lower: text.toLowerCase(), tokens, mentions, now };

  const values = rest.filter((p) => p.param.type !== 'boolean');
  // An object written as JSON is taken whole; otherwise its fields compete for values like parameters.
  const groups = fromIntent && !mentions.some((m) => m.kind === 'json') ? fieldGroups(values, profiles.length) : [];
  const fields = groups.flatMap((g) => g.fields);
  const isField = new Set(fields.map((f) => f.index));
  const pairs = scorePairs(ctx, [...values, ...fields]).filter((s) => (fromIntent || s.evidence >= 0.5) && (!isField.has(s.profile.index) || fieldPairAcceptable(s)));
  const chosen = assign(pairs);
  const taken = new Set<Mention>([...chosen.values()].map((s) => s.mention));
  for (const p of values) {
    const pick = chosen.get(p.index);
    const request = fromIntent ? freeText(text, p, pick) : undefined;
    if (request !== undefined) {
      set(p, request, 0.4, `the request itself ${JSON.stringify(request)}`);
      continue;
    }
    if (pick !== undefined) {
      setPick(ctx, p, pick, taken, set, factor, where);
      continue;
    }
    if (p.param.type === 'array') {
      const list = plainList(text, tokens, p);
      if (list) set(p, list.items, 0.5 * factor, `${list.why}${where}`);
    }
    const group = groups.find((g) => g.parent === p);
    const built = group === undefined ? undefined : buildObject(group, chosen, (field, pick) => pickValue(ctx, field, pick, taken));
    if (built !== undefined) set(p, built.value, (0.35 + 0.65 * Math.min(1, built.evidence)) * factor, `built from its fields: ${built.why}`);
  }
  for (const p of rest) {
    if (p.param.type !== 'boolean') continue;
    const flag = readFlag(tokens, p, (t) => mentions.some((m) => m.kind !== 'phrase' && t.start >= m.start && t.end <= m.end));
    if (flag && (p.param.required || flag.certainty >= 0.6)) set(p, flag.value, flag.certainty * factor, `${flag.value} from ${flag.why}${where}`);
  }
}

/**
 * A capitalised name made only of a parameter's name words ("CVV is 123", "the ICAO code") is
 * that parameter named, a cue for the value beside it, not a value.
 */
function onlyNameWords(m: Mention, tokens: readonly Token[], profiles: readonly ParamProfile[]): boolean {
  if (m.kind !== 'proper') return false;
  const words = tokens.filter((t) => t.start >= m.start && t.end <= m.end);
  const named = (t: Token): boolean => profiles.some((p) => p.name.some((n) => sameStem(t.stem, n)) || (p.param.properties ?? []).some((f) => splitName(f.name).some((w) => sameStem(t.stem, stem(w)))));
  return words.length > 0 && words.every(named);
}

/** A pick's value; for a list, grown over the items written with it. */
function pickValue(ctx: Context, p: ParamProfile, pick: Scored, taken: Set<Mention>): unknown {
  if (p.param.type !== 'array' || pick.mention.kind === 'json') return pick.value;
  const items = extendList(ctx, pick.mention, p, (m) => m !== pick.mention && taken.has(m));
  return items.length > 0 ? items : pick.value;
}

function setPick(ctx: Context, p: ParamProfile, pick: Scored, taken: Set<Mention>, set: Setter, factor: number, where: string): void {
  const value = pickValue(ctx, p, pick, taken);
  const sure = pick.mention.kind === 'quoted' ? 1 : 0.35 + 0.65 * Math.min(1, pick.evidence);
  set(p, value, sure * factor, `${pick.why}${where}`);
}

const REQUEST_VERB =
  /^\s*(?:(?:please|kindly|can you|could you|i want to|i'd like to|i need to|help me)\s+)*(?:search(?:\s+(?:for|through|in))?|find|look\s+(?:up|for)|lookup|query(?:\s+for)?|show(?:\s+me)?|list|fetch|retrieve|get|tell\s+me\s+about|ask(?:\s+about)?|explain|describe|summari[sz]e|research|browse)\b\s*(?:for\s+|about\s+|me\s+)?/i;

/**
 * A free-text parameter (`query`, `prompt`, `question`…) that is required and found no value of
 * its own with evidence takes the request itself, minus its leading verb ("search for X" → "X"):
 * a search query is the words, not the one capitalised name in them. Only for requests that
 * start with such a verb; other text is not guessed.
 */
function freeText(text: string, p: ParamProfile, pick: Scored | undefined): string | undefined {
  if (!p.param.required || !isTextual(p.param) || p.param.enum !== undefined || !p.roles.has('text')) return undefined;
  if (pick !== undefined && (pick.evidence >= 0.2 || !['proper', 'phrase', 'id'].includes(pick.mention.kind))) return undefined;
  const verb = REQUEST_VERB.exec(text);
  if (verb === null) return undefined;
  const body = text.slice(verb[0].length).replace(/[\s.!?]+$/, '').trim();
  return body.split(/\s+/).length >= 2 && p.fits(body) ? body : undefined;
}

function clean(text: string): string {
  const cut = text.length > MAX_INTENT_CHARS ? text.slice(0, MAX_INTENT_CHARS) : text;
  return cut.replace(CONTROL, ' ');
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
