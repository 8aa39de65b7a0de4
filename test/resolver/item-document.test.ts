import { describe, expect, it } from 'vitest';
import { knowledgeDocument } from '../../src/resolver/item-document.js';
import type { Knowledge } from '../../src/registry/types.js';

const face = '\u{1F600}';

function entry(title: string, body: string): Knowledge {
  return { id: 'k', title, entryType: 'pattern', version: '1.0.0', tags: [], body, signature: null, source: { path: '/p/.ai/knowledge/k.md', tier: 'project' } };
}

/** With the u flag a class of surrogates matches only a half that stands alone. */
const loneHalf = /[\uD800-\uDFFF]/u;

describe('knowledgeDocument', () => {
  it('folds whitespace and cuts the body opening and the embedded text at their caps', () => {
    const doc = knowledgeDocument(entry('  Retry\n  policy ', 'b'.repeat(700)), 'e');
    expect(doc.embedText).toBe('knowledge: k\nRetry policy');
    expect(doc.doc).toBe(`knowledge: k\nRetry policy\npattern\n${'b'.repeat(600)}`);
    expect(knowledgeDocument(entry('t'.repeat(500), ''), 'e').embedText).toBe(`knowledge: k\n${'t'.repeat(387)}`);
  });

  it('never cuts a surrogate pair in half at a cap', () => {
    // `knowledge: k\n` is 13 units, so the face's first half is unit 399 of the embedded text, and unit 599 of the body.
    const doc = knowledgeDocument(entry(`${'t'.repeat(386)}${face}tail`, `${'b'.repeat(599)}${face}${'c'.repeat(100)}`), 'e');
    expect(doc.embedText).toBe(`knowledge: k\n${'t'.repeat(386)}`);
    expect(doc.doc.endsWith(`\npattern\n${'b'.repeat(599)}`)).toBe(true);
    expect(loneHalf.test(doc.embedText) || loneHalf.test(doc.doc)).toBe(false);
  });
});
