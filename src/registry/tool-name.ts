/**
 * Tool ids are plain ASCII so that a name that looks like `weather` but is spelled with a
 * Cyrillic `е` can never be registered or called in place of the real one.
 */

export const TOOL_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
export const TOOL_ID_MAX_LENGTH = 128;

export type ToolNameCheck = { ok: true } | { ok: false; reason: string; suggestion?: string };

interface LookAlike {
  ascii: string;
  name: string;
}

/** Latin look-alikes NFKC leaves alone. Fullwidth and compatibility forms are handled by NFKC itself. */
const CONFUSABLES: ReadonlyMap<number, LookAlike> = new Map<number, LookAlike>([
  [0x0430, { ascii: 'a', name: 'CYRILLIC SMALL LETTER A' }],
  [0x0432, { ascii: 'b', name: 'CYRILLIC SMALL LETTER VE' }],
  [0x0435, { ascii: 'e', name: 'CYRILLIC SMALL LETTER IE' }],
  [0x043a, { ascii: 'k', name: 'CYRILLIC SMALL LETTER KA' }],
  [0x043c, { ascii: 'm', name: 'CYRILLIC SMALL LETTER EM' }],
  [0x043d, { ascii: 'h', name: 'CYRILLIC SMALL LETTER EN' }],
  [0x043e, { ascii: 'o', name: 'CYRILLIC SMALL LETTER O' }],
  [0x0440, { ascii: 'p', name: 'CYRILLIC SMALL LETTER ER' }],
  [0x0441, { ascii: 'c', name: 'CYRILLIC SMALL LETTER ES' }],
  [0x0442, { ascii: 't', name: 'CYRILLIC SMALL LETTER TE' }],
  [0x0443, { ascii: 'y', name: 'CYRILLIC SMALL LETTER U' }],
  [0x0445, { ascii: 'x', name: 'CYRILLIC SMALL LETTER HA' }],
  [0x0455, { ascii: 's', name: 'CYRILLIC SMALL LETTER DZE' }],
  [0x0456, { ascii: 'i', name: 'CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I' }],
  [0x0458, { ascii: 'j', name: 'CYRILLIC SMALL LETTER JE' }],
  [0x04bb, { ascii: 'h', name: 'CYRILLIC SMALL LETTER SHHA' }],
  [0x0501, { ascii: 'd', name: 'CYRILLIC SMALL LETTER KOMI DE' }],
  [0x051b, { ascii: 'q', name: 'CYRILLIC SMALL LETTER QA' }],
  [0x051d, { ascii: 'w', name: 'CYRILLIC SMALL LETTER WE' }],
  [0x0410, { ascii: 'A', name: 'CYRILLIC CAPITAL LETTER A' }],
  [0x0412, { ascii: 'B', name: 'CYRILLIC CAPITAL LETTER VE' }],
  [0x0415, { ascii: 'E', name: 'CYRILLIC CAPITAL LETTER IE' }],
  [0x041a, { ascii: 'K', name: 'CYRILLIC CAPITAL LETTER KA' }],
  [0x041c, { ascii: 'M', name: 'CYRILLIC CAPITAL LETTER EM' }],
  [0x041d, { ascii: 'H', name: 'CYRILLIC CAPITAL LETTER EN' }],
  [0x041e, { ascii: 'O', name: 'CYRILLIC CAPITAL LETTER O' }],
  [0x0420, { ascii: 'P', name: 'CYRILLIC CAPITAL LETTER ER' }],
  [0x0421, { ascii: 'C', name: 'CYRILLIC CAPITAL LETTER ES' }],
  [0x0422, { ascii: 'T', name: 'CYRILLIC CAPITAL LETTER TE' }],
  [0x0423, { ascii: 'Y', name: 'CYRILLIC CAPITAL LETTER U' }],
  [0x0425, { ascii: 'X', name: 'CYRILLIC CAPITAL LETTER HA' }],
  [0x0405, { ascii: 'S', name: 'CYRILLIC CAPITAL LETTER DZE' }],
  [0x0406, { ascii: 'I', name: 'CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I' }],
  [0x0408, { ascii: 'J', name: 'CYRILLIC CAPITAL LETTER JE' }],
  [0x03b1, { ascii: 'a', name: 'GREEK SMALL LETTER ALPHA' }],
  [0x03b9, { ascii: 'i', name: 'GREEK SMALL LETTER IOTA' }],
  [0x03ba, { ascii: 'k', name: 'GREEK SMALL LETTER KAPPA' }],
  [0x03bd, { ascii: 'v', name: 'GREEK SMALL LETTER NU' }],
  [0x03bf, { ascii: 'o', name: 'GREEK SMALL LETTER OMICRON' }],
  [0x03c1, { ascii: 'p', name: 'GREEK SMALL LETTER RHO' }],
  [0x03c4, { ascii: 't', name: 'GREEK SMALL LETTER TAU' }],
  [0x03c5, { ascii: 'u', name: 'GREEK SMALL LETTER UPSILON' }],
  [0x03c7, { ascii: 'x', name: 'GREEK SMALL LETTER CHI' }],
  [0x0391, { ascii: 'A', name: 'GREEK CAPITAL LETTER ALPHA' }],
  [0x0392, { ascii: 'B', name: 'GREEK CAPITAL LETTER BETA' }],
  [0x0395, { ascii: 'E', name: 'GREEK CAPITAL LETTER EPSILON' }],
  [0x0396, { ascii: 'Z', name: 'GREEK CAPITAL LETTER ZETA' }],
  [0x0397, { ascii: 'H', name: 'GREEK CAPITAL LETTER ETA' }],
  [0x0399, { ascii: 'I', name: 'GREEK CAPITAL LETTER IOTA' }],
  [0x039a, { ascii: 'K', name: 'GREEK CAPITAL LETTER KAPPA' }],
  [0x039c, { ascii: 'M', name: 'GREEK CAPITAL LETTER MU' }],
  [0x039d, { ascii: 'N', name: 'GREEK CAPITAL LETTER NU' }],
  [0x039f, { ascii: 'O', name: 'GREEK CAPITAL LETTER OMICRON' }],
  [0x03a1, { ascii: 'P', name: 'GREEK CAPITAL LETTER RHO' }],
  [0x03a4, { ascii: 'T', name: 'GREEK CAPITAL LETTER TAU' }],
  [0x03a5, { ascii: 'Y', name: 'GREEK CAPITAL LETTER UPSILON' }],
  [0x03a7, { ascii: 'X', name: 'GREEK CAPITAL LETTER CHI' }],
  [0x0131, { ascii: 'i', name: 'LATIN SMALL LETTER DOTLESS I' }],
  [0x2010, { ascii: '-', name: 'HYPHEN' }],
  [0x2012, { ascii: '-', name: 'FIGURE DASH' }],
  [0x2013, { ascii: '-', name: 'EN DASH' }],
  [0x2014, { ascii: '-', name: 'EM DASH' }],
  [0x2212, { ascii: '-', name: 'MINUS SIGN' }],
  [0x00b7, { ascii: '.', name: 'MIDDLE DOT' }],
]);

const INVISIBLE: ReadonlyMap<number, string> = new Map([
  [0x00ad, 'SOFT HYPHEN'],
  [0x034f, 'COMBINING GRAPHEME JOINER'],
  [0x061c, 'ARABIC LETTER MARK'],
  [0x180e, 'MONGOLIAN VOWEL SEPARATOR'],
  [0x200b, 'ZERO WIDTH SPACE'],
  [0x200c, 'ZERO WIDTH NON-JOINER'],
  [0x200d, 'ZERO WIDTH JOINER'],
  [0x200e, 'LEFT-TO-RIGHT MARK'],
  [0x200f, 'RIGHT-TO-LEFT MARK'],
  [0x202a, 'LEFT-TO-RIGHT EMBEDDING'],
  [0x202b, 'RIGHT-TO-LEFT EMBEDDING'],
  [0x202c, 'POP DIRECTIONAL FORMATTING'],
  [0x202d, 'LEFT-TO-RIGHT OVERRIDE'],
  [0x202e, 'RIGHT-TO-LEFT OVERRIDE'],
  [0x2060, 'WORD JOINER'],
  [0x2066, 'LEFT-TO-RIGHT ISOLATE'],
  [0x2067, 'RIGHT-TO-LEFT ISOLATE'],
  [0x2068, 'FIRST STRONG ISOLATE'],
  [0x2069, 'POP DIRECTIONAL ISOLATE'],
  [0xfeff, 'ZERO WIDTH NO-BREAK SPACE'],
]);

const ALLOWED_CHAR = /^[A-Za-z0-9_.-]$/;

/**
 * Checks a tool id (from a manifest or an incoming call). The reason names the first offending
 * character by code point and what it looks like; the suggestion is the ASCII spelling when one
 * exists.
 */
export function checkToolName(name: string): ToolNameCheck {
  if (name.length === 0) {
    return { ok: false, reason: 'the tool id is empty; write a name made of A-Z, a-z, 0-9, "_", "." and "-"' };
  }
  if (TOOL_ID_PATTERN.test(name)) return { ok: true };

  const suggestion = asciiSpelling(name);
  const withSuggestion = (reason: string): ToolNameCheck =>
    suggestion !== undefined && suggestion !== name && TOOL_ID_PATTERN.test(suggestion)
      ? { ok: false, reason: `${reason}; write "${suggestion}"`, suggestion }
      : { ok: false, reason };

  const chars = Array.from(name);
  for (let index = 0; index < chars.length; index++) {
    const ch = chars[index] ?? '';
    if (ALLOWED_CHAR.test(ch)) continue;
    const what = describeChar(ch);
    return withSuggestion(
      `tool id ${JSON.stringify(name)} contains ${what} at position ${index + 1}; ` +
        'tool ids may use only ASCII letters, digits, "_", "." and "-"',
    );
  }
  // Only the length can be wrong now.
  return withSuggestion(
    `tool id is ${name.length} characters long; the limit is ${TOOL_ID_MAX_LENGTH}, so write a shorter name`,
  );
}

/** The ASCII spelling a human most likely meant, or undefined when some character has none. */
export function asciiSpelling(name: string): string | undefined {
  let out = '';
  for (const ch of Array.from(name)) {
    const mapped = asciiFor(ch);
    if (mapped === undefined) return undefined;
    out += mapped;
  }
  return out.slice(0, TOOL_ID_MAX_LENGTH);
}

function asciiFor(ch: string): string | undefined {
  if (ALLOWED_CHAR.test(ch)) return ch;
  const cp = ch.codePointAt(0) ?? 0;
  if (INVISIBLE.has(cp)) return '';
  const known = CONFUSABLES.get(cp);
  if (known !== undefined) return known.ascii;
  const nfkc = ch.normalize('NFKC');
  if (nfkc !== ch) {
    let mapped = '';
    for (const part of Array.from(nfkc)) {
      const sub = ALLOWED_CHAR.test(part) ? part : CONFUSABLES.get(part.codePointAt(0) ?? 0)?.ascii;
      if (sub === undefined) return stripMarks(ch);
      mapped += sub;
    }
    return mapped;
  }
  return stripMarks(ch);
}

/** `é` → `e`: accented Latin letters have an obvious ASCII base. */
function stripMarks(ch: string): string | undefined {
  const base = ch.normalize('NFD').replace(/\p{M}/gu, '');
  return base.length > 0 && Array.from(base).every((c) => ALLOWED_CHAR.test(c)) ? base : undefined;
}

function describeChar(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  const code = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  const invisible = INVISIBLE.get(cp);
  if (invisible !== undefined) return `${code} ${invisible} (an invisible character)`;
  const known = CONFUSABLES.get(cp);
  if (known !== undefined) return `${code} ${known.name} (looks like "${known.ascii}")`;
  const nfkc = ch.normalize('NFKC');
  if (nfkc !== ch) return `${code} "${ch}" (a compatibility form of "${nfkc}"${fullwidthNote(cp)})`;
  if (/\s/u.test(ch)) return `${code} (a space)`;
  if (/\p{C}/u.test(ch)) return `${code} (a control or format character)`;
  const base = stripMarks(ch);
  if (base !== undefined) return `${code} "${ch}" (looks like "${base}")`;
  return `${code} "${ch}"`;
}

function fullwidthNote(cp: number): string {
  return cp >= 0xff01 && cp <= 0xff5e ? ', fullwidth' : '';
}
