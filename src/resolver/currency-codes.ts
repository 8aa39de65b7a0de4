/**
 * ISO 4217 currency codes ("USD", "EUR") as the values they are: a code written in an intent
 * belongs to a parameter that asks for a currency, never to an amount, a term or an id beside it
 * ("500 USD"). People also write the currency's name ("100 US dollars", "in Japanese yen"): for
 * a parameter that asks for a currency that is its code. The codes and names are the ones
 * Node's ICU knows (Intl.supportedValuesOf, Intl.DisplayNames).
 */

/** Codes that are also English words written in capitals ("list ALL files"): not taken for currencies. */
const ALSO_WORDS: ReadonlySet<string> = new Set(['ALL', 'TOP', 'TRY', 'SOS', 'MAD', 'PEN', 'CUP', 'GEL', 'BAM', 'MOP', 'CAD']);
/** The X codes that are money people hold; the others are metals ("Gold"), funds and test codes. */
const X_CURRENCIES: ReadonlySet<string> = new Set(['XAF', 'XOF', 'XCD', 'XPF']);
/** What people write for the main currencies besides ICU's name ("US Dollar"). */
const ALIASES: ReadonlyArray<readonly [string, string]> = [
  ['dollar', 'USD'], ['u.s. dollar', 'USD'], ['american dollar', 'USD'], ['euro', 'EUR'], ['pound', 'GBP'], ['pound sterling', 'GBP'], ['sterling', 'GBP'],
  ['yen', 'JPY'], ['yuan', 'CNY'], ['renminbi', 'CNY'],
];
/** A currency's name is read only this far into a text: names are looked for one by one. */
const MAX_SCAN_CHARS = 4096;

let codes: ReadonlySet<string> | undefined;
let names: ReadonlyMap<string, string> | undefined;

/** Whether `text` is exactly a currency's ISO 4217 code, in capitals. */
export function isCurrencyCode(text: string): boolean {
  codes ??= new Set(Intl.supportedValuesOf('currency'));
  return /^[A-Z]{3}$/.test(text) && codes.has(text) && !ALSO_WORDS.has(text);
}

/** Whether a parameter asks for a currency: by its name (`currency`, `fromCurrency`) or its description ("ISO 4217", "currency code"). */
export function asksCurrency(name: string, description: string): boolean {
  return /currency|currencies/i.test(name) || /\b(iso[ -]?4217|currency code|currency)\b/i.test(description);
}

/** Lower-case names (and plurals: "euros", "japanese yen") to codes. */
function currencyNames(): ReadonlyMap<string, string> {
  if (names !== undefined) return names;
  const out = new Map<string, string>();
  const display = new Intl.DisplayNames(['en'], { type: 'currency', fallback: 'none' });
  const add = (name: string, code: string): void => {
    const lower = name.toLowerCase();
    if (!out.has(lower)) out.set(lower, code);
    if (/[a-z]$/.test(lower) && !/(?:yen|yuan|baht|renminbi|sterling|won|rand|s)$/.test(lower) && !out.has(`${lower}s`)) out.set(`${lower}s`, code);
  };
  for (const [name, code] of ALIASES) add(name, code);
  for (const code of Intl.supportedValuesOf('currency')) {
    if (code.startsWith('X') && !X_CURRENCIES.has(code)) continue;
    const name = display.of(code);
    // Old currencies are named with their years ("German Mark (1948–2001)"): people mean the current one.
    if (name !== undefined && name !== code && !/[()\d]/.test(name)) add(name, code);
  }
  names = out;
  return names;
}

/** The code of a currency written as its code or by its name ("US dollars", "Euro"); undefined for anything else. */
export function currencyCode(text: string): string | undefined {
  const t = text.trim();
  if (isCurrencyCode(t)) return t;
  return currencyNames().get(t.toLowerCase().replace(/\s+/g, ' '));
}

/** Spans of `text` that name a currency, longest first where names overlap ("Canadian dollars", not "dollars"). */
export function currencyNameSpans(text: string): Array<{ start: number; end: number; code: string }> {
  const lower = text.slice(0, MAX_SCAN_CHARS).toLowerCase();
  const found: Array<{ start: number; end: number; code: string }> = [];
  for (const [name, code] of currencyNames()) {
    for (let at = lower.indexOf(name); at >= 0; at = lower.indexOf(name, at + 1)) {
      const end = at + name.length;
      if (/[a-z0-9]/.test(lower[at - 1] ?? '') || /[a-z0-9]/.test(lower[end] ?? '')) continue;
      found.push({ start: at, end, code });
    }
  }
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: typeof found = [];
  for (const f of found) if (!out.some((o) => f.start < o.end && o.start < f.end)) out.push(f);
  return out;
}
