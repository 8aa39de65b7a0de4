/**
 * What a parameter's schema says about the values it takes: the words of its name and
 * description, the examples its description lists ("(e.g., river, lake)"), the units it is
 * measured in, and broad roles (a date, a place, an identifier, the start of a range…).
 */
import { formatProblem } from '../registry/string-formats.js';
import { compilePattern, MAX_MATCHED_CHARS } from '../registry/string-pattern.js';
import type { ParameterType, ToolParameter } from '../registry/types.js';
import { asksCountryCode } from './country-codes.js';
import { asksCurrency } from './currency-codes.js';
import { dateFormatOf, timeFormatOf, type DateFormat, type TimeFormat } from './date-values.js';
import { holdsSecret } from './secret-fields.js';
import { addressPartsAsked } from './address-parts.js';
import type { AddressPart } from './mention.js';
import { STOPWORDS, splitName, stem } from './text-words.js';
import { UNIT_FORMS } from './units.js';

export type Role =
  | 'date' | 'time' | 'year' | 'email' | 'url' | 'path' | 'id' | 'location' | 'name' | 'source' | 'target'
  | 'money' | 'percent' | 'ip' | 'version' | 'phone' | 'count' | 'text' | 'creator' | 'cast';

export interface ParamProfile {
  param: ToolParameter;
  index: number;
  /** Stems of the name's words ("post_id" → post, id). */
  name: string[];
  /** Content stems of the description outside its examples, minus the name's. */
  desc: Set<string>;
  /** Examples the description lists, as written. */
  examples: string[];
  roles: Set<Role>;
  /** Canonical units the name or description mention ("in kilograms" → kilogram). */
  units: Set<string>;
  /**
   * Stems of the nouns a number for this parameter counts: its name's words and, for numbers,
   * what the description counts or measures in ("How many commits", "Length in characters").
   */
  counts: Set<string>;
  dateFormat: DateFormat | undefined;
  /** For a date that takes its time too ("YYYY-MM-DD HH:MM"): how the time is written after it. */
  timeFormat: TimeFormat | undefined;
  /** For arrays: the type of one item (items.type, else string). */
  itemType: ParameterType;
  /** Whether a string is of the parameter's format and matches its pattern: a value that is not never goes there. */
  fits: (value: string) => boolean;
  /** The pattern turns ordinary words away, so a value that matches it is evidence for this parameter. */
  selectivePattern: boolean;
  /** It takes a country's ISO code (country-codes.ts): a country written by name is sent as its code, and nothing else goes there. */
  countryCode: boolean;
  /** It asks for a currency (currency-codes.ts): the only kind of text parameter a currency code ("USD") goes to. */
  currency: boolean;
  /** It holds a secret (secret-fields.ts): only a value written as one and named as one goes there. */
  secret: boolean;
  /** The parts of a postal address its name or description asks for (address-parts.ts). */
  addressParts: Set<AddressPart>;
}

const stems = (words: string): ReadonlySet<string> => new Set(words.split(' ').map(stem));

const NAME_ROLES: ReadonlyArray<readonly [Role, ReadonlySet<string>]> = [
  ['date', stems('date day dob birthday deadline')],
  ['time', stems('time hour clock timestamp timeframe period')],
  ['year', stems('year')],
  ['email', stems('email mail recipient sender cc bcc')],
  ['url', stems('url uri link website webpage endpoint href')],
  ['path', stems('path file directory folder filename dir')],
  ['id', stems('id identifier uuid guid code key serial sku isbn token hash')],
  ['location', stems('location city country region place area address state destination origin venue continent province town county neighborhood territory nation where')],
  ['name', stems('name title person author')],
  ['source', stems('start begin from source origin departure initial min minimum lower first since')],
  ['target', stems('end to target destination arrival final max maximum upper last until')],
  ['money', stems('price cost budget amount revenue investment salary fee income payment fund spend wage expense donation fare rent pay capital loan balance usd dollar')],
  ['percent', stems('percent percentage rate ratio proportion')],
  ['ip', stems('ip host hostname server')],
  ['version', stems('version')],
  ['phone', stems('phone telephone mobile')],
  ['count', stems('count number quantity total size amount')],
  ['text', stems('query q search keyword term prompt question topic request')],
  // Who made a work ("directed by X", "a novel by X") and who appears in it ("starring X"): named by the words before the name.
  ['creator', stems('author writer director creator artist composer painter photographer designer developer publisher producer maker manufacturer inventor architect organizer organiser illustrator novelist poet songwriter')],
  ['cast', stems('cast actor actress star starring performer')],
];

/** The words that name what a parameter of this role holds ("directory" for a path). */
export function roleWords(role: Role): ReadonlySet<string> {
  return NAME_ROLES.find(([r]) => r === role)?.[1] ?? new Set();
}

/** Roles a description can give even when the name does not ("The email address of …"). */
const DESC_ROLES: ReadonlySet<Role> = new Set(['email', 'url', 'path', 'location', 'money', 'ip', 'phone', 'creator', 'cast']);

const EXAMPLES = /\((?:e\.g\.|eg\.?|for example|such as|like)[,:]?\s*([^)]*)\)|\b(?:e\.g\.|such as|for example)[,:]?\s*([^.;)]*)/i;
/** Options a description enumerates ("one of: daily, weekly", "one of VISA/MASTER", "either 'metric' or 'imperial'"): read as its examples. */
const OPTIONS = /\b(?:one of|possible values(?: include| are)?|valid values(?: are)?|allowed values(?: are)?|options(?: are| include)?|either)\b[:\s]+((?:['"`]?[\w][\w -]{0,30}['"`]?\s*(?:,\s*(?:or\s+)?|\/|\s+or\s+)){1,15}['"`]?[\w][\w -]{0,30}['"`]?)/i;
const NAME_FILLER = new Set(['the', 'a', 'an', 'of', 'is']);
const COUNTED = /\b(?:how\s+many|number\s+of|count\s+of|quantity\s+of|amount\s+of|in)\s+(?:the\s+)?([a-z]+)/gi;

/** A parameter whose values are read from the text as text: a string, or a value of no declared type (`any`). */
export function isTextual(param: ToolParameter): boolean {
  return param.type === 'string' || param.type === 'any';
}

/** Profiles numbered from `firstIndex` (an object's fields are numbered after the tool's parameters). */
export function profileParameters(parameters: readonly ToolParameter[], firstIndex = 0): ParamProfile[] {
  return parameters.map((param, index) => profileParameter(param, firstIndex + index));
}

function profileParameter(param: ToolParameter, index: number): ParamProfile {
  const rawName = splitName(param.name).filter((w) => !NAME_FILLER.has(w));
  const name = rawName.map(stem);
  const description = param.description ?? '';
  const m = EXAMPLES.exec(description);
  const options = OPTIONS.exec(description);
  const examples = [...(m ? splitExamples(m[1] ?? m[2] ?? '') : []), ...(options ? splitExamples((options[1] ?? '').replaceAll('/', ', ')) : [])];
  const prose = m ? description.slice(0, m.index) + description.slice(m.index + m[0].length) : description;
  const nameSet = new Set(name);
  const desc = new Set<string>();
  const units = new Set<string>();
  for (const word of prose.toLowerCase().match(/[a-z]+|[%$€°]/g) ?? []) {
    const unit = UNIT_FORMS.get(word);
    if (unit !== undefined && word.length > 2) units.add(unit);
    if (STOPWORDS.has(word)) continue;
    const s = stem(word);
    if (!nameSet.has(s)) desc.add(s);
  }
  for (const word of rawName) {
    const unit = UNIT_FORMS.get(word);
    if (unit !== undefined && word.length > 1) units.add(unit);
  }
  const roles = new Set<Role>();
  // Only the head of a description names what the value is ("The email address of …").
  const head = [...desc].slice(0, 6);
  for (const [role, words] of NAME_ROLES) {
    if (name.some((w) => words.has(w))) roles.add(role);
    else if (DESC_ROLES.has(role) && head.some((w) => words.has(w))) roles.add(role);
  }
  // `format: date` is RFC 3339's full-date whatever the prose says: that is what the call is checked against.
  const dateFormat = param.format === 'date' ? 'YYYY-MM-DD' : dateFormatOf(description);
  if (dateFormat !== undefined) roles.add('date');
  const role = param.format === undefined ? undefined : FORMAT_ROLES[param.format];
  if (role !== undefined) roles.add(role);
  if (roles.has('time') && roles.has('date')) roles.delete('time');
  const itemType = param.items?.type ?? 'string';
  const counts = new Set(name.filter((w, i) => w.length >= 3 && !STOPWORDS.has(rawName[i] ?? '')));
  if (param.type === 'integer' || param.type === 'number') {
    for (const m of prose.matchAll(COUNTED)) {
      const word = (m[1] ?? '').toLowerCase();
      if (word.length >= 3 && !STOPWORDS.has(word)) counts.add(stem(word));
    }
  }
  const countryCode = isTextual(param) && param.enum === undefined && asksCountryCode(param.name, description);
  const currency = asksCurrency(param.name, description);
  const secret = isTextual(param) && param.enum === undefined && holdsSecret(param.name);
  const addressParts = addressPartsAsked(rawName, description);
  const timeFormat = timeFormatOf(description);
  return { param, index, name, desc, examples, roles, units, counts, dateFormat, timeFormat, itemType, countryCode, currency, secret, addressParts, ...stringChecks(param) };
}

const FORMAT_ROLES: Readonly<Partial<Record<NonNullable<ToolParameter['format']>, Role>>> = {
  email: 'email', url: 'url', uri: 'url', path: 'path', time: 'time', uuid: 'id', ipv4: 'ip', ipv6: 'ip',
};
/** Plain words: a pattern that accepts them says nothing about which value is meant. */
const ORDINARY = ['', 'example', 'Some words'];

function stringChecks(param: ToolParameter): Pick<ParamProfile, 'fits' | 'selectivePattern'> {
  const { format } = param;
  const compiled = param.pattern === undefined ? undefined : compilePattern(param.pattern);
  const test = compiled?.ok === true ? compiled.test : undefined;
  const fits = (value: string): boolean =>
    (format === undefined || formatProblem(format, value) === undefined) && (test === undefined || (value.length <= MAX_MATCHED_CHARS && test(value)));
  return { fits, selectivePattern: test !== undefined && !ORDINARY.some((word) => test(word)) };
}

function splitExamples(list: string): string[] {
  const out: string[] = [];
  for (const piece of list.split(/,\s*|\s+or\s+|;\s*/)) {
    const item = piece
      .trim()
      .replace(/^(?:or|and)\s+/i, '')
      .replace(/\s*(?:etc\.?|\.\.\.|…)$/i, '')
      .replace(/^['"“‘`]+|['"”’`]+$/g, '')
      .trim();
    if (item.length < 2 || !/[A-Za-z]/.test(item) || /^(?:YYYY|MM|DD|HH)/i.test(item)) continue;
    out.push(item);
  }
  return out;
}
