/**
 * Country names as their ISO 3166-1 alpha-2 codes ("Germany" → DE), for a parameter that asks
 * for a country code: people write the name, APIs take the code. The names are ICU's English
 * region names, which Node ships (Intl.DisplayNames), plus the short forms people use.
 */

/** What people write for a few countries besides ICU's name. */
const ALIASES: Readonly<Record<string, string>> = {
  usa: 'US',
  'u.s.': 'US',
  'u.s.a.': 'US',
  america: 'US',
  'united states of america': 'US',
  uk: 'GB',
  'u.k.': 'GB',
  britain: 'GB',
  'great britain': 'GB',
  england: 'GB',
  holland: 'NL',
  'south korea': 'KR',
  korea: 'KR',
  'north korea': 'KP',
  russia: 'RU',
  'czech republic': 'CZ',
  uae: 'AE',
  'ivory coast': 'CI',
  vietnam: 'VN',
};

/** Region codes ICU names that are no country: groupings, unknown, private use. */
const NOT_COUNTRIES: ReadonlySet<string> = new Set(['EU', 'EZ', 'UN', 'ZZ', 'QO', 'XA', 'XB']);

/** Countries by every name they are written with, and the codes themselves. */
let countries: { byName: Map<string, string>; codes: Set<string> } | undefined;

function known(): { byName: Map<string, string>; codes: Set<string> } {
  if (countries !== undefined) return countries;
  const byName = new Map(Object.entries(ALIASES));
  const display = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
  for (let a = 65; a <= 90; a++) {
    for (let b = 65; b <= 90; b++) {
      const code = String.fromCharCode(a, b);
      // A deprecated code (UK, FX, DD) names a country whose code is another; groupings are not countries.
      if (NOT_COUNTRIES.has(code) || new Intl.Locale(`und-${code}`).region !== code) continue;
      const name = display.of(code);
      if (name === undefined || name === code) continue;
      // "Myanmar (Burma)": the name, the name alone, and the one in brackets.
      const [, plain, other] = /^(.*?)\s*\((.*)\)$/.exec(name) ?? [undefined, name, undefined];
      for (const written of [name, plain, other]) if (written !== undefined && !byName.has(written.toLowerCase())) byName.set(written.toLowerCase(), code);
    }
  }
  countries = { byName, codes: new Set(byName.values()) };
  return countries;
}

/** The alpha-2 code of a country written by name (or already as its code); undefined for anything else. */
export function countryCode(text: string): string | undefined {
  const t = text.trim().replace(/^the\s+/i, '').toLowerCase();
  const { byName, codes } = known();
  if (/^[a-z]{2}$/.test(t) && codes.has(t.toUpperCase())) return t.toUpperCase();
  return byName.get(t);
}

/** Whether a parameter asks for a country code: by its name (`countryCode`, `country_iso`) or its description ("ISO 3166", "2-letter country code"). */
export function asksCountryCode(name: string, description: string): boolean {
  const n = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (/^(country(code|iso|iso2|alpha2)?|iso(3166)?(country)?(code)?|cc)$/.test(n) && n !== 'country') return true;
  if (n === 'country' || n.endsWith('country') || n.startsWith('country')) return /\b(iso[ -]?3166|alpha-?2|two-letter|2-letter|country code)\b/i.test(description);
  return /\biso[ -]?3166\b/i.test(description);
}
