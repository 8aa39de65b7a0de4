import type { Hit } from './lance-table.js';
import { splitWords } from '../registry/tool-document.js';
import { textQueryTerms } from './text-query.js';

/**
 * BM25 over a few thousand short documents, in memory. Prefetch searches every snapshot of the
 * text an agent is writing; through LanceDB's full-text index each search cost more than the
 * rest of a pass-through request together (Arrow batches, a native call, its threads). Its
 * scores differ a little from LanceDB's, which is fine where it is used: to choose what to
 * prefetch, never to answer an intent.
 */
export interface TextBm25 {
  search(query: string, k: number): Hit[];
}

const K1 = 1.2;
const B = 0.75;

export function createTextBm25(documents: ReadonlyArray<{ id: string; text: string }>): TextBm25 {
  const ids = documents.map((d) => d.id);
  const lengths = new Float64Array(documents.length);
  // term → [document index, term frequency] pairs
  const postings = new Map<string, Array<[number, number]>>();
  documents.forEach((d, i) => {
    const counts = new Map<string, number>();
    // The whole document, split as queries are (textQueryTerms caps a query's length, not a document's).
    const terms = splitWords(d.text).split(' ').filter((t) => t !== '');
    for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
    lengths[i] = terms.length;
    for (const [t, n] of counts) {
      let list = postings.get(t);
      if (!list) postings.set(t, (list = []));
      list.push([i, n]);
    }
  });
  const n = documents.length;
  const meanLength = n > 0 ? lengths.reduce((s, x) => s + x, 0) / n : 0;
  return {
    search(query, k) {
      const scores = new Map<number, number>();
      for (const term of new Set(textQueryTerms(query).split(' '))) {
        const list = postings.get(term);
        if (!list) continue;
        const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
        for (const [doc, tf] of list) {
          const norm = tf + K1 * (1 - B + (B * (lengths[doc] as number)) / (meanLength || 1));
          scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (K1 + 1)) / norm);
        }
      }
      return [...scores]
        .sort((a, b) => b[1] - a[1] || a[0] - b[0])
        .slice(0, k)
        .map(([doc, score]) => ({ id: ids[doc] as string, score }));
    },
  };
}
