import { describe, expect, it } from 'vitest';
import { createSnapshotter, lastSentences } from '../../src/prefetch/snapshotter.js';
import type { Snapshot } from '../../src/prefetch/types.js';
import { expectKiwiError } from '../fixtures/prefetch/expect-kiwi.js';

function feed(text: string, chunk: number, snapshotter = createSnapshotter()): Snapshot[] {
  const out: Snapshot[] = [];
  for (let i = 0; i < text.length; i += chunk) {
    const s = snapshotter.push(text.slice(i, i + chunk));
    if (s) out.push(s);
  }
  return out;
}

describe('snapshotter', () => {
  it('takes a snapshot every ~100 new characters when no sentence ends', () => {
    const words = 'alpha beta gamma delta epsilon '.repeat(20); // 620 chars, no sentence end
    const snaps = feed(words, 7);
    expect(snaps.length).toBe(5);
    let previous = 0;
    for (const s of snaps) {
      // Counted from the last snapshot, in whole chunks.
      expect(s.at - previous).toBeGreaterThanOrEqual(100);
      expect(s.at - previous).toBeLessThan(107);
      previous = s.at;
    }
  });

  it('takes one at a sentence end once minChars new characters arrived, not before', () => {
    const s = createSnapshotter();
    expect(s.push('Hi.')).toBeUndefined(); // a sentence end, but only 3 new characters
    expect(s.push(' To enrich these leads')).toBeUndefined();
    const snap = s.push(" I'll look up each company's domain.");
    expect(snap?.query).toBe("To enrich these leads I'll look up each company's domain.");
    expect(snap?.text).toBe("Hi. To enrich these leads I'll look up each company's domain.");
    expect(snap?.at).toBe(61);
    // `:`, `!`, `?` and a newline end a sentence too.
    for (const end of [' like this:', ' is that right?', ' do it now!', ' first line\n']) {
      const t = createSnapshotter();
      expect(t.push(`Some text that is long enough${end}`), end).toBeDefined();
    }
    // A dot inside a number or a name is not followed by a space: no snapshot.
    expect(createSnapshotter().push('version 3.5 of example.com is out and fine')).toBeUndefined();
  });

  it('queries the last sentence, with the one before when the last is short', () => {
    expect(lastSentences('First we gather the leads. Then we look them up one by one in the registry of companies.', 200)).toBe(
      'Then we look them up one by one in the registry of companies.',
    );
    expect(lastSentences('I have the list of leads. Now I will', 200)).toBe('I have the list of leads. Now I will');
    const long = `${'word '.repeat(80)}end.`;
    const q = lastSentences(long, 200);
    expect(q.length).toBeLessThanOrEqual(200);
    expect(q.startsWith('word')).toBe(true); // cut at a word start
    expect(q.endsWith('end.')).toBe(true);
  });

  it('keeps a window of the newest text and starts over after reset()', () => {
    const s = createSnapshotter({ everyChars: 50, windowChars: 60, minChars: 10 });
    const snaps = feed('x'.repeat(45) + ' ' + 'y'.repeat(200), 10, s);
    const last = snaps[snaps.length - 1] as Snapshot;
    expect(last.text).toBe('y'.repeat(60));
    s.reset();
    const after = s.push('A new sentence after the intent.');
    expect(after?.text).toBe('A new sentence after the intent.');
    expect(after?.at).toBe(246 + 32); // `at` counts the whole request, across resets
  });

  it('cuts the window on a surrogate pair boundary, never inside one', () => {
    const s = createSnapshotter({ everyChars: 16, windowChars: 16, minChars: 0 });
    const snap = s.push(`a${'🙂'.repeat(10)}`);
    expect(snap?.text.length).toBeLessThanOrEqual(16);
    expect(snap?.text.codePointAt(0)).toBe(0x1f642);
  });

  it('gives nothing for whitespace, and nothing for an empty chunk', () => {
    const s = createSnapshotter({ everyChars: 4, minChars: 0 });
    expect(s.push('')).toBeUndefined();
    expect(s.push('      \n   ')).toBeUndefined();
  });

  it('rejects bad options with a clear error', () => {
    expectKiwiError(() => createSnapshotter({ everyChars: 0 }), 'INVALID_INPUT', /everyChars must be an integer/);
    expectKiwiError(() => createSnapshotter({ windowChars: 1.5 }), 'INVALID_INPUT', /windowChars/);
    expectKiwiError(() => createSnapshotter({ minChars: 200 }), 'INVALID_INPUT', /minChars \(200\) is above everyChars/);
    expectKiwiError(() => createSnapshotter({ queryChars: Number.NaN }), 'INVALID_INPUT', /queryChars/);
  });
});
