/**
 * Words of intents and of parameter names/descriptions, reduced to a crude stem so that
 * "weighing" meets "weight" and "named" meets "name". Deliberately small: argument filling
 * needs word overlap near a value, not linguistics.
 */

export interface Token {
  /** Lower-cased stem, see `stem`. */
  stem: string;
  lower: string;
  start: number;
  end: number;
}

const WORD = /[A-Za-z]+|\d+/g;

/** Words that say nothing about which parameter a value belongs to. */
export const STOPWORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'the', 'of', 'for', 'to', 'in', 'on', 'at', 'by', 'with', 'from', 'and', 'or', 'is', 'are', 'be',
  'been', 'was', 'were', 'this', 'that', 'these', 'those', 'which', 'who', 'whom', 'whose', 'what', 'when',
  'where', 'you', 'your', 'want', 'wants', 'would', 'like', 'me', 'my', 'i', 'it', 'its', 'please', 'provide',
  'tell', 'get', 'retrieve', 'give', 'show', 'find', 'about', 'information', 'info', 'specify', 'specific',
  'specified', 'given', 'desired', 'e', 'g', 'eg', 'etc', 'if', 'should', 'can', 'could', 'will', 'used', 'use',
  'using', 'as', 'into', 'per', 'any', 'some', 'all', 'based', 'need', 'needs', 'needed', 'which', 'there',
  'their', 'them', 'they', 'we', 'our', 'us', 'has', 'have', 'had', 'do', 'does', 'not', 'no', 'so', 'than',
  'then', 'also', 'such', 'other', 'one', 'more', 'most', 'optional', 'required', 'default', 'value', 'values',
  'parameter', 'certain', 'particular', 'over', 'under', 'between', 'within', 'up', 'how', 'many', 'much',
  'want', 'wish', 'let', 'know', 'check', 'list', 'set', 'make', 'some', 'type', 'name', 'data', 'number',
]);

// Maps, not object literals: a word like "constructor" must not find Object.prototype.
/** Words that name a parameter without its word ("called X" names a name); keys and values are stems. */
const SYNONYMS: ReadonlyMap<string, string> = new Map([
  ['call', 'nam'],
  ['old', 'age'],
  ['aged', 'age'],
  ['ag', 'age'],
  ['weigh', 'weight'],
  ['situat', 'locat'],
  ['held', 'locat'],
]);

/**
 * Strips common English suffixes: plural, -ing, -ed, -ion, a final e. Words of three letters or
 * fewer stay as they are, so that "as" and "is" do not collapse into "a" and "i".
 */
export function stem(word: string): string {
  let w = word.toLowerCase();
  if (w.length <= 3) return SYNONYMS.get(w) ?? w;
  if (w.endsWith('ies') && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  if (w.endsWith('ing') && w.length > 5) w = w.slice(0, -3);
  else if (w.endsWith('ed') && w.length > 4) w = w.slice(0, -2);
  else if (w.endsWith('ion') && w.length > 5) w = w.slice(0, -3);
  if (w.endsWith('e') && w.length > 3) w = w.slice(0, -1);
  if (w.endsWith('y') && w.length > 3) w = `${w.slice(0, -1)}i`;
  return SYNONYMS.get(w) ?? w;
}

/** Same word up to a short suffix ("weigh"/"weight", "analys"/"analysi"). */
export function sameStem(a: string, b: string): boolean {
  if (a === b) return true;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  return short.length >= 4 && long.length - short.length <= 2 && long.startsWith(short);
}

export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  WORD.lastIndex = 0;
  for (let m = WORD.exec(text); m !== null; m = WORD.exec(text)) {
    const lower = m[0].toLowerCase();
    tokens.push({ stem: stem(lower), lower, start: m.index, end: m.index + m[0].length });
  }
  return tokens;
}

/** `postId`, `post_id`, `post-id`, `post.id` → ["post", "id"], lower-cased. */
export function splitName(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w.length > 0)
    .map((w) => w.toLowerCase());
}
