/**
 * Objects built from their parts: an `object` parameter whose schema names its fields
 * (`profileData: {name, email}`) takes the values the text gives for those fields ("my name is
 * John Doe, my email is john@example.com" → {name, email}). Each field is matched like an
 * optional parameter, so it needs words in the text that name it; an object with no field named
 * is not built. One level deep.
 */
import type { Scored } from './param-matching.js';
import type { MentionKind } from './mention.js';
import { profileParameters, type ParamProfile, type Role } from './param-profile.js';
import { setOwn } from '../base/plain-object.js';

export interface FieldGroup {
  parent: ParamProfile;
  fields: ParamProfile[];
}

/** The fields of the object parameters among `profiles`, as profiles indexed after every top-level one. */
export function fieldGroups(profiles: readonly ParamProfile[], firstIndex: number): FieldGroup[] {
  const groups: FieldGroup[] = [];
  let next = firstIndex;
  for (const parent of profiles) {
    const nested = parent.param.type === 'object' ? (parent.param.properties ?? []) : [];
    // Booleans are read from polarity words, and nested objects would need a second level: neither is built here.
    const usable = nested.filter((f) => f.type !== 'boolean' && f.type !== 'object');
    if (usable.length === 0) continue;
    groups.push({ parent, fields: profileParameters(usable, next) });
    next += usable.length;
  }
  return groups;
}

/** How clearly the text must name a field: more than an optional parameter needs, since the object is a guess built from its fields. */
const FIELD_EVIDENCE = 0.8;
/** Values whose shape says what they are go only to a field whose role is that shape. */
const SHAPED: ReadonlyArray<readonly [MentionKind, Role]> = [['phone', 'phone'], ['email', 'email'], ['url', 'url'], ['ip', 'ip'], ['path', 'path']];

/** Whether a value may go to a field: named clearly, not a guessed phrase, and of the field's shape (a date for a date). */
export function fieldPairAcceptable(pair: Scored): boolean {
  const { mention, profile } = pair;
  if (pair.evidence < FIELD_EVIDENCE || mention.kind === 'phrase') return false;
  const kind = mention.kind === 'quoted' ? mention.inner : mention.kind;
  // A date field takes a date, not the year or the number beside the word "date"; a range is no one field's value.
  if (profile.roles.has('date') && kind !== 'date' && kind !== 'reldate' && mention.kind !== 'quoted') return false;
  if (kind === 'range') return false;
  return SHAPED.every(([k, role]) => kind !== k || profile.roles.has(role));
}

/**
 * The object the chosen values make for a group, with the least sure of its fields' evidence.
 * Undefined unless at least half its fields were found: an object mostly unsaid is a guess, and
 * is asked for instead. `valueOf` turns a field's pick into its value (a list grows over the
 * items written with it).
 */
export function buildObject(
  group: FieldGroup,
  chosen: ReadonlyMap<number, Scored>,
  valueOf: (field: ParamProfile, pick: Scored) => unknown,
): { value: Record<string, unknown>; evidence: number; why: string } | undefined {
  const value: Record<string, unknown> = {};
  const why: string[] = [];
  let evidence = Infinity;
  for (const field of group.fields) {
    const pick = chosen.get(field.index);
    if (pick === undefined) continue;
    setOwn(value, field.param.name, valueOf(field, pick));
    why.push(`${field.param.name} from ${pick.why}`);
    evidence = Math.min(evidence, pick.evidence);
  }
  if (why.length === 0 || why.length * 2 < group.fields.length) return undefined;
  return { value, evidence, why: why.join('; ') };
}
