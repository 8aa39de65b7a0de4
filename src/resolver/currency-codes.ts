/**
 * ISO 4217 currency codes ("USD", "EUR") as the values they are: a code written in an intent
 * belongs to a parameter that asks for a currency, never to an amount, a term or an id beside it
 * ("500 USD"). The codes are the ones Node's ICU knows (Intl.supportedValuesOf).
 */

/** Codes that are also English words written in capitals ("list ALL files"): not taken for currencies. */
const ALSO_WORDS: ReadonlySet<string> = new Set(['ALL', 'TOP', 'TRY', 'SOS', 'MAD', 'PEN', 'CUP', 'GEL', 'BAM', 'MOP', 'CAD']);

let codes: ReadonlySet<string> | undefined;

/** Whether `text` is exactly a currency's ISO 4217 code, in capitals. */
export function isCurrencyCode(text: string): boolean {
  codes ??= new Set(Intl.supportedValuesOf('currency'));
  return /^[A-Z]{3}$/.test(text) && codes.has(text) && !ALSO_WORDS.has(text);
}

/** Whether a parameter asks for a currency: by its name (`currency`, `fromCurrency`) or its description ("ISO 4217", "currency code"). */
export function asksCurrency(name: string, description: string): boolean {
  return /currency|currencies/i.test(name) || /\b(iso[ -]?4217|currency code|currency)\b/i.test(description);
}
