import { describe, expect, it } from 'vitest';
import { createTextBm25 } from '../../src/store/text-bm25.js';

const DOCS = [
  { id: 'read_file', text: 'read file\nRead a text file in the project and return its contents\npath: File to read' },
  { id: 'word_count', text: 'word count\nCount lines, words and characters of a text file\npath: File' },
  { id: 'git_log', text: 'git log\nThe most recent commits of the repository\ncount: how many commits' },
  { id: 'sendSlackMessage', text: 'send slack message\nPost a message to a Slack channel' },
];

describe('in-memory BM25', () => {
  it('ranks the documents that hold the query words, rare words weighing more than common ones', () => {
    const bm25 = createTextBm25(DOCS);
    const hits = bm25.search('show me the recent commits', 10);
    // "the" is in read_file's document too, but "recent" and "commits" only in git_log's.
    expect(hits.map((h) => h.id)).toEqual(['git_log', 'read_file']);
    const words = bm25.search('count the words of the file', 10);
    expect(words[0]?.id).toBe('word_count');
    // "file" is in three documents, "contents" in one: a document with the rare word wins.
    const rare = bm25.search('file contents', 10);
    expect(rare[0]?.id).toBe('read_file');
    expect(rare.every((h, i) => i === 0 || h.score <= (rare[i - 1]?.score ?? Infinity))).toBe(true);
  });

  it('splits identifiers as tool documents are split, caps the hits at k, and finds nothing for nothing', () => {
    const bm25 = createTextBm25(DOCS);
    expect(bm25.search('sendSlackMessage', 10)[0]?.id).toBe('sendSlackMessage');
    expect(bm25.search('file', 2)).toHaveLength(2);
    expect(bm25.search('', 10)).toEqual([]);
    expect(bm25.search('!!! ???', 10)).toEqual([]);
    expect(bm25.search('zebra', 10)).toEqual([]);
    expect(createTextBm25([]).search('file', 10)).toEqual([]);
  });
});
