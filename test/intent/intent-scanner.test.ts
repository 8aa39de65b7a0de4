import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../src/base/errors.js';
import { createIntentScanner, intentInstructions, type IntentScannerOptions, type ScanEvent } from '../../src/intent/intent-scanner.js';

/** Pushes the chunks, ends the stream, and checks that no character was lost or duplicated. */
function scanChunks(chunks: string[], options?: IntentScannerOptions): ScanEvent[] {
  const scanner = createIntentScanner(options);
  const events: ScanEvent[] = [];
  for (const chunk of chunks) events.push(...mergedWithin(scanner.push(chunk)));
  events.push(...mergedWithin(scanner.end()));
  const rebuilt = rebuild(events);
  if (rebuilt !== chunks.join('')) expect(rebuilt).toBe(chunks.join(''));
  return events;
}

/** One push never returns two text events in a row, nor an empty one. */
function mergedWithin(events: ScanEvent[]): ScanEvent[] {
  const ok = events.every((e, i) => e.type !== 'text' || (e.text.length > 0 && events[i - 1]?.type !== 'text'));
  if (!ok) expect(events, 'adjacent or empty text events').toBe('merged');
  return events;
}

function rebuild(events: ScanEvent[]): string {
  return events.map((e) => (e.type === 'text' ? e.text : e.raw)).join('');
}

function summary(events: ScanEvent[]) {
  return {
    text: events.map((e) => (e.type === 'text' ? e.text : '')).join(''),
    intents: events.flatMap((e) => (e.type === 'intent' ? [e.text] : [])),
    invalid: events.flatMap((e) => (e.type === 'invalid' ? [e.raw] : [])),
  };
}

const scan = (text: string, options?: IntentScannerOptions) => summary(scanChunks([text], options));

function expectKiwi(fn: () => unknown, pattern: RegExp): void {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(KiwiError);
  expect((error as KiwiError).code).toBe('INVALID_INPUT');
  expect((error as KiwiError).message).toMatch(pattern);
}

/** Deterministic PRNG (mulberry32), so a failing random chunking can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('recognising intents', () => {
  it('splits text and an intent into events in stream order', () => {
    const events = scanChunks(['Checking now. [TOOL: send the deploy summary to #ops] Done.']);
    expect(events).toEqual([
      { type: 'text', text: 'Checking now. ' },
      { type: 'intent', text: 'send the deploy summary to #ops', raw: '[TOOL: send the deploy summary to #ops]', index: 0 },
      { type: 'text', text: ' Done.' },
    ]);
  });

  it('numbers several intents in one chunk, with nothing between them', () => {
    const events = scanChunks(['[TOOL:a][TOOL: b ]x[TOOL:c]']);
    expect(events.filter((e) => e.type === 'intent')).toEqual([
      { type: 'intent', text: 'a', raw: '[TOOL:a]', index: 0 },
      { type: 'intent', text: 'b', raw: '[TOOL: b ]', index: 1 },
      { type: 'intent', text: 'c', raw: '[TOOL:c]', index: 2 },
    ]);
  });

  it('matches the marker in any case, with spaces or tabs around it', () => {
    expect(scan('[tool: a] [ Tool :b] [\tTOOL\t: c] [  tOoL  :d]').intents).toEqual(['a', 'b', 'c', 'd']);
  });

  it('takes a custom marker, case-insensitively', () => {
    expect(scan('[ACT: go] [TOOL: not this] [act:too]', { marker: 'Act' })).toEqual({ text: ' [TOOL: not this] ', intents: ['go', 'too'], invalid: [] });
  });

  it('trims the inside and keeps newlines within it', () => {
    expect(scan('[TOOL:\n  list files\n  in "src"\n]').intents).toEqual(['list files\n  in "src"']);
  });

  it('leaves other brackets as text: references, TODOs, links, near-misses', () => {
    const text = 'See [1], [TODO: x], [a](http://b), [TOOLS: y], [TOOL x], [TOO: z], [T:], [ ], [], [[]], [:TOOL].';
    expect(scan(text)).toEqual({ text, intents: [], invalid: [] });
  });

  it('does not accept more than 8 spaces around the marker', () => {
    expect(scan(`[${' '.repeat(9)}TOOL: a]`).intents).toEqual([]);
    expect(scan(`[TOOL${' '.repeat(9)}: a]`).intents).toEqual([]);
    expect(scan(`[${' '.repeat(8)}TOOL${' '.repeat(8)}: a]`).intents).toEqual(['a']);
  });

  it('recognises intents inside code blocks too (documented choice)', () => {
    expect(scan('```\n[TOOL: run the tests]\n```').intents).toEqual(['run the tests']);
  });
});

describe('what closes an intent', () => {
  it('ignores brackets inside double quotes, single quotes and backticks', () => {
    expect(scan(`[TOOL: search for "a]b"] [TOOL: grep 'x[y' now] [TOOL: run \`ls ]\`]`).intents).toEqual([
      'search for "a]b"',
      "grep 'x[y' now",
      'run `ls ]`',
    ]);
  });

  it('does not treat an apostrophe or an inch mark as an opening quote', () => {
    expect(scan("[TOOL: read John's notes] tail").intents).toEqual(["read John's notes"]);
    expect(scan('[TOOL: find 5" screens] tail').intents).toEqual(['find 5" screens']);
    expect(scan("[TOOL: open café's menu] tail").intents).toEqual(["open café's menu"]);
  });

  it('ignores a quote character inside a quote of another kind', () => {
    expect(scan(`[TOOL: say "it's ]" and 'he said "]"'] tail`).intents).toEqual([`say "it's ]" and 'he said "]"'`]);
  });

  it('balances nested brackets', () => {
    expect(scan('[TOOL: get items [1,2] from [the [list]]] after').intents).toEqual(['get items [1,2] from [the [list]]']);
  });

  it('does not close on an escaped bracket, and unescapes it in the text', () => {
    const r = scan('[TOOL: send \\] and \\[ to #ops] after');
    expect(r.intents).toEqual(['send ] and [ to #ops']);
    expect(r.text).toBe(' after');
  });

  it('keeps other backslashes as written, and lets an escaped backslash be closed after', () => {
    expect(scan('[TOOL: list C:\\temp\\logs] x').intents).toEqual(['list C:\\temp\\logs']);
    expect(scan('[TOOL: match a\\\\] x').intents).toEqual(['match a\\\\']);
    expect(scan('[TOOL: say "a \\" ] b"] x').intents).toEqual(['say "a \\" ] b"']);
  });
});

describe('holding back only what could still be an opening', () => {
  it('releases text up to a trailing partial opening, then the rest once it fails', () => {
    const scanner = createIntentScanner();
    expect(scanner.push('Hello [')).toEqual([{ type: 'text', text: 'Hello ' }]);
    expect(scanner.push(' T')).toEqual([]);
    expect(scanner.push('OO')).toEqual([]);
    expect(scanner.push('K at this')).toEqual([{ type: 'text', text: '[ TOOK at this' }]);
  });

  it('releases a bracket at once when its next character rules it out', () => {
    const scanner = createIntentScanner();
    expect(scanner.push('see [1] and [a](b) and [TODO')).toEqual([{ type: 'text', text: 'see [1] and [a](b) and [TODO' }]);
    expect(scanner.push('[TO[')).toEqual([{ type: 'text', text: '[TO' }]);
    expect(scanner.push('x')).toEqual([{ type: 'text', text: '[x' }]);
  });

  it('holds an open intent until its closing bracket arrives', () => {
    const scanner = createIntentScanner();
    expect(scanner.push('a [TOOL: send')).toEqual([{ type: 'text', text: 'a ' }]);
    expect(scanner.push(' "x]')).toEqual([]);
    expect(scanner.push('"] b')).toEqual([
      { type: 'intent', text: 'send "x]"', raw: '[TOOL: send "x]"]', index: 0 },
      { type: 'text', text: ' b' },
    ]);
  });

  it('releases a held partial opening as text at the end of the stream', () => {
    const scanner = createIntentScanner();
    expect(scanner.push('tail [TOO')).toEqual([{ type: 'text', text: 'tail ' }]);
    expect(scanner.end()).toEqual([{ type: 'text', text: '[TOO' }]);
  });
});

describe('chunking', () => {
  const input =
    "Let me check 😀 the logs [1] first.[TOOL: search for \"a]b\" in 'logs/app.log'] Then [ tool :get items [1,2] " +
    'from the list]. Also [TODO: later] and [link](http://x) — [TOOL: send \\] to café\'s #ops channel]!';
  const expected = {
    text: "Let me check 😀 the logs [1] first. Then . Also [TODO: later] and [link](http://x) — !",
    intents: ['search for "a]b" in \'logs/app.log\'', 'get items [1,2] from the list', "send ] to café's #ops channel"],
    invalid: [],
  };

  it('reads the sample in one piece', () => {
    expect(scan(input)).toEqual(expected);
  });

  it('gives the same result at every split into two chunks', () => {
    for (let i = 0; i <= input.length; i++) {
      expect(summary(scanChunks([input.slice(0, i), input.slice(i)])), `split at ${i}`).toEqual(expected);
    }
  });

  it('gives the same result at every split into three chunks', () => {
    for (let i = 0; i <= input.length; i++) {
      for (let j = i; j <= input.length; j++) {
        const result = summary(scanChunks([input.slice(0, i), input.slice(i, j), input.slice(j)]));
        if (JSON.stringify(result) !== JSON.stringify(expected)) expect(result, `splits at ${i}, ${j}`).toEqual(expected);
      }
    }
  });

  it('gives the same result one character at a time', () => {
    expect(summary(scanChunks([...input.split('')]))).toEqual(expected);
  });

  it('gives the same result for random chunkings', () => {
    const next = random(42);
    for (let run = 0; run < 500; run++) {
      const chunks: string[] = [];
      for (let i = 0; i < input.length; ) {
        const size = Math.floor(next() * 12);
        chunks.push(input.slice(i, i + size));
        i += size;
      }
      expect(summary(scanChunks(chunks)), `run ${run}: ${JSON.stringify(chunks)}`).toEqual(expected);
    }
  });
});

describe('invalid intents', () => {
  it('reports an empty intent as invalid and does not number it', () => {
    const events = scanChunks(['a [TOOL: ] b [TOOL:] c [TOOL: x]']);
    expect(events.filter((e) => e.type === 'invalid')).toEqual([
      { type: 'invalid', raw: '[TOOL: ]', reason: expect.stringContaining('empty intent') },
      { type: 'invalid', raw: '[TOOL:]', reason: expect.stringContaining('empty intent') },
    ]);
    expect(events.find((e) => e.type === 'intent')).toMatchObject({ text: 'x', index: 0 });
  });

  it('gives up on an intent at the size cap and scans on right after it', () => {
    const long = `[TOOL: ${'x'.repeat(200)}]`;
    const events = scanChunks([`a ${long} b [TOOL: next]`], { maxIntentChars: 100 });
    const invalid = events.find((e) => e.type === 'invalid');
    expect(invalid).toEqual({ type: 'invalid', raw: long.slice(0, 100), reason: expect.stringContaining('longer than 100 characters') });
    expect(summary(events)).toMatchObject({ text: `a ${long.slice(100)} b `, intents: ['next'] });
  });

  it('reports the cap as soon as it is reached, across chunks', () => {
    const scanner = createIntentScanner({ maxIntentChars: 64 });
    expect(scanner.push('[TOOL: ')).toEqual([]);
    expect(scanner.push('y'.repeat(56))).toEqual([]);
    expect(scanner.push('y')).toEqual([{ type: 'invalid', raw: `[TOOL: ${'y'.repeat(57)}`, reason: expect.any(String) }]);
    expect(scanner.push('yy]')).toEqual([{ type: 'text', text: 'yy]' }]);
  });

  it('accepts an intent of exactly the cap, closing bracket included', () => {
    const exact = `[TOOL: ${'z'.repeat(56)}]`;
    expect(exact.length).toBe(64);
    expect(scan(exact, { maxIntentChars: 64 }).intents).toEqual(['z'.repeat(56)]);
  });

  it('does not split a surrogate pair at the cap', () => {
    const events = scanChunks([`[TOOL: ${'w'.repeat(56)}😀 more]`], { maxIntentChars: 64 });
    const invalid = events.find((e) => e.type === 'invalid');
    expect(invalid?.type === 'invalid' && invalid.raw).toBe(`[TOOL: ${'w'.repeat(56)}`);
    expect(events.at(-1)).toEqual({ type: 'text', text: '😀 more]' });
  });

  it('reports an intent still open at the end of the stream, with its raw text', () => {
    const scanner = createIntentScanner();
    expect(scanner.push('ok [TOOL: send "the report')).toEqual([{ type: 'text', text: 'ok ' }]);
    expect(scanner.end()).toEqual([{ type: 'invalid', raw: '[TOOL: send "the report', reason: expect.stringContaining('unclosed intent') }]);
    expect(scanner.end()).toEqual([]);
  });

  it('refuses a push after the end, and a delta that is not a string', () => {
    const scanner = createIntentScanner();
    scanner.end();
    expectKiwi(() => scanner.push('x'), /has ended; create a new scanner/);
    expectKiwi(() => createIntentScanner().push(42 as unknown as string), /takes text deltas \(strings\), not number/);
  });

  it('refuses unusable options with what to use instead', () => {
    expectKiwi(() => createIntentScanner({ maxIntentChars: 0 }), /maxIntentChars must be an integer from 64/);
    expectKiwi(() => createIntentScanner({ maxIntentChars: 100.5 }), /maxIntentChars/);
    expectKiwi(() => createIntentScanner({ maxIntentChars: Number.POSITIVE_INFINITY }), /maxIntentChars/);
    expectKiwi(() => createIntentScanner({ maxTranscriptChars: -1 }), /maxTranscriptChars/);
    expectKiwi(() => createIntentScanner({ marker: '' }), /marker "" is not usable: use 1 to 32 ASCII letters/);
    expectKiwi(() => createIntentScanner({ marker: '[X' }), /marker "\[X" is not usable/);
    expectKiwi(() => createIntentScanner({ marker: 'TOOL NAME' }), /not usable/);
    expectKiwi(() => createIntentScanner({ marker: 'x'.repeat(33) }), /not usable/);
  });
});

describe('pathological streams', () => {
  it('passes a million "[" through as text without holding more than the last one', () => {
    const scanner = createIntentScanner();
    const chunk = '['.repeat(1000);
    let out = 0;
    for (let i = 0; i < 1000; i++) {
      const events = scanner.push(chunk);
      expect(events).toEqual([{ type: 'text', text: i === 0 ? '['.repeat(999) : chunk }]);
      out += 1000;
    }
    expect(scanner.end()).toEqual([{ type: 'text', text: '[' }]);
    expect(out).toBe(1_000_000);
  });

  it('bounds an unclosed quote by the cap and finds the next intent after it', () => {
    const input = `[TOOL: find "foo] ${'and more text '.repeat(200)} [TOOL: next one]`;
    const chunks = input.match(/[\s\S]{1,7}/g) ?? [];
    const r = summary(scanChunks(chunks));
    expect(r.invalid).toEqual([input.slice(0, 2000)]);
    expect(r.intents).toEqual(['next one']);
  });

  it('keeps conserving text through endless nesting and repeated openings', () => {
    const input = '[TOOL:'.repeat(20_000) + ']'.repeat(100);
    const events = scanChunks(input.match(/[\s\S]{1,13}/g) ?? []);
    expect(events.every((e) => e.type !== 'invalid' || e.raw.length <= 2000)).toBe(true);
  });

  it('reports an endless unclosed intent as text after the cap, chunk by chunk', () => {
    const scanner = createIntentScanner();
    expect(scanner.push('[TOOL: ')).toEqual([]);
    const events = scanner.push('a'.repeat(100_000));
    expect(events).toEqual([
      { type: 'invalid', raw: `[TOOL: ${'a'.repeat(1993)}`, reason: expect.any(String) },
      { type: 'text', text: 'a'.repeat(100_000 - 1993) },
    ]);
    expect(scanner.push('aaa')).toEqual([{ type: 'text', text: 'aaa' }]);
  });
});

describe('transcript', () => {
  it('holds everything pushed, intents included, and counts it', () => {
    const scanner = createIntentScanner();
    scanner.push('hello [TOOL: a');
    scanner.push('] world');
    expect(scanner.transcript).toBe('hello [TOOL: a] world');
    expect(scanner.charsSeen).toBe(21);
  });

  it('keeps only the last 64 KiB by default', () => {
    const scanner = createIntentScanner();
    let all = '';
    for (let i = 0; i < 3000; i++) {
      const chunk = `${i} lorem ipsum dolor sit amet, `;
      all += chunk;
      scanner.push(chunk);
    }
    expect(scanner.transcript).toBe(all.slice(-65536));
    expect(scanner.charsSeen).toBe(all.length);
  });

  it('keeps a custom amount, never starting inside a surrogate pair, or none', () => {
    const scanner = createIntentScanner({ maxTranscriptChars: 5 });
    scanner.push('ab😀fghi');
    expect(scanner.transcript).toBe('fghi');
    scanner.push('ghijkl');
    expect(scanner.transcript).toBe('hijkl');
    const none = createIntentScanner({ maxTranscriptChars: 0 });
    none.push('abc');
    expect(none.transcript).toBe('');
    expect(none.charsSeen).toBe(3);
  });
});

describe('intentInstructions', () => {
  it('is short and covers the rules', () => {
    const text = intentInstructions();
    expect(text.split(/\s+/).filter(Boolean).length).toBeLessThanOrEqual(120);
    expect(text).toContain('[TOOL:');
    expect(text).toMatch(/one action per intent/i);
    expect(text).toMatch(/quote names/);
    expect(text).toMatch(/units/);
    expect(text).toMatch(/wait for its result/);
    expect(text).toMatch(/never invent/i);
  });

  it('says what becomes of plain words: run once a model confirms them, or write the exact call from the menu', () => {
    const model = intentInstructions({ plainWords: 'model' });
    expect(model).toContain('Plain words run once a model confirms the call.');
    const none = intentInstructions({ plainWords: 'asked-back' });
    expect(none).toContain('Plain words may be asked back: write the exact call from the menu.');
    expect(intentInstructions()).toBe(none);
    for (const text of [model, none]) expect(text.split(/\s+/).filter(Boolean).length).toBeLessThanOrEqual(120);
  });

  it('writes its example so the scanner reads it as an intent, for a custom marker too', () => {
    expect(scan(intentInstructions()).intents[0]).toBe('what to do, in plain words');
    expect(scan(intentInstructions()).intents[1]).toBe('tool_id {"name": "value"}');
    const custom = intentInstructions({ marker: 'DO' });
    expect(custom).toContain('[DO:');
    expect(scan(custom, { marker: 'DO' }).intents[0]).toBe('what to do, in plain words');
    expectKiwi(() => intentInstructions({ marker: 'a b' }), /not usable/);
  });
});

describe('the intent being written', () => {
  it('is readable while it streams and gone once it closes', () => {
    const scanner = createIntentScanner();
    scanner.push('Let me look. [TO');
    expect(scanner.openIntent).toBeUndefined();
    scanner.push('OL: read the file "a');
    expect(scanner.openIntent).toBe(' read the file "a');
    scanner.push('.txt"');
    expect(scanner.openIntent).toBe(' read the file "a.txt"');
    scanner.push('] done');
    expect(scanner.openIntent).toBeUndefined();
  });
});
