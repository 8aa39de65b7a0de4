import { splitWords } from '../registry/tool-document.js';

/** Intents are sentences; past this the extra words only slow BM25 down. */
const MAX_QUERY_TERMS = 64;
const MAX_QUERY_CHARS = 4_000;
const OPERATORS = new Set(['AND', 'OR', 'NOT']);

/**
 * Reduces an intent to plain words for the full-text index. LanceDB's string queries have
 * syntax (quotes make phrases, and its parser has varied between versions), so the text that
 * reaches it is only letters, digits and single spaces; it is also passed as a structured
 * MatchQuery, which tokenises without parsing. Identifiers are split the way tool documents
 * split them (`getWaterQuality` → "get water quality"), so naming a tool finds it.
 * Returns '' when nothing searchable is left.
 */
export function textQueryTerms(intent: string): string {
  const words: string[] = [];
  for (const raw of intent.slice(0, MAX_QUERY_CHARS).split(/[^\p{L}\p{N}_.-]+/u)) {
    if (raw === '' || OPERATORS.has(raw)) continue;
    for (const word of splitWords(raw).split(' ')) {
      if (word === '') continue;
      words.push(word);
      if (words.length >= MAX_QUERY_TERMS) return words.join(' ');
    }
  }
  return words.join(' ');
}
