import type { DateParts } from './date-values.js';

/** A value an intent spells out (extract-values.ts finds them), with where it stands. */
export type MentionKind =
  | 'quoted' | 'json' | 'url' | 'email' | 'ip' | 'date' | 'reldate' | 'time' | 'version' | 'path'
  | 'phone' | 'range' | 'number' | 'id' | 'proper'
  /** Words that equal a parameter's listed example or allowed value ("lake", "staging"). */
  | 'phrase';

/** Which part of a postal address a value is (address-parts.ts); `address` is the whole. */
export type AddressPart = 'address' | 'street' | 'unit' | 'city' | 'state' | 'zip';

export interface Mention {
  kind: MentionKind;
  /** Span in the intent, quotes and unit included. */
  start: number;
  end: number;
  /** The value as written: quoted text without its quotes, a number without its unit. */
  text: string;
  /** Numeric value, for numbers and for quoted text that is a number. */
  num?: number;
  date?: DateParts;
  /** For a date: the time written right after it ("20/06/2022 17:00", "June 20, 2022 at 5pm"). */
  time?: string;
  /** The word right after a number ("kg", "employees"), lower-case. */
  unit?: string;
  /** For a number written as a word ("five"): a count, never an identifier or text. */
  spelled?: boolean;
  /** For a number: up to three words after it, lower-case ("interesting facts"), for the noun it counts. */
  words?: string[];
  money?: boolean;
  percent?: boolean;
  json?: unknown;
  /** For a number with a unit: number and unit as written ("2.4 GHz"). */
  written?: string;
  /** For a phrase: the words in front of a parameter's name word ("Sodium chloride" chemical). */
  modifier?: boolean;
  /** For a value read from a postal address: which part of it. */
  part?: AddressPart;
  /** For quoted text: what the text inside the quotes is, when it is one value of another kind. */
  inner?: MentionKind;
}
