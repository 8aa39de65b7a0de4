/**
 * The word rule of the static embedder, shared by its build script (vocabulary, word counts,
 * fitting) and by the runtime, so that a word is the same thing in both:
 *
 * 1. Unicode NFKC; 2. camelCase and acronym boundaries become breaks (`getWeather` → get weather,
 * `HTTPServer` → http server), since tool names are written that way and descriptions are not;
 * 3. lower case; 4. a word is a maximal run of letters and digits (`_`, `-`, `.`, `'` and
 * everything else separate words); 5. words longer than MAX_WORD_CHARS are dropped (hashes, URLs
 * glued together, base64: never in a vocabulary, and they would only cost a lookup).
 *
 * Changing this rule changes what every model means: bump TOKENIZER_ID and rebuild the model.
 */
export const TOKENIZER_ID = 'kiwi-words-v1';

export const MAX_WORD_CHARS = 32;

const LOWER_THEN_UPPER = /([\p{Ll}\p{N}])(\p{Lu})/gu;
const ACRONYM_THEN_WORD = /(\p{Lu})(\p{Lu}\p{Ll})/gu;
const WORD = /[\p{L}\p{N}]+/gu;

export function tokenize(text: string): string[] {
  const split = text.normalize('NFKC').replace(LOWER_THEN_UPPER, '$1 $2').replace(ACRONYM_THEN_WORD, '$1 $2').toLowerCase();
  const words: string[] = [];
  for (const match of split.matchAll(WORD)) {
    if (match[0].length <= MAX_WORD_CHARS) words.push(match[0]);
  }
  return words;
}
