import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../src/base/errors.js';
import { createSseDecoder, createSseParser, type SseEvent, type SseParserOptions } from '../../src/primitives/sse-parser.js';

function parse(chunks: string[], options?: SseParserOptions): SseEvent[] {
  const decoder = createSseDecoder(options);
  const events: SseEvent[] = [];
  for (const chunk of chunks) decoder.push(chunk, (event) => events.push(event));
  return events;
}

/** Every way of cutting `text` in two, plus one character at a time, must give the same events. */
function expectSplitInvariant(text: string, expected: SseEvent[]): void {
  expect(parse([text])).toEqual(expected);
  expect(parse([...text])).toEqual(expected);
  for (let i = 1; i < text.length; i++) expect(parse([text.slice(0, i), text.slice(i)]), `split at ${i}`).toEqual(expected);
}

describe('SSE decoder', () => {
  it('parses event, data, id and defaults the type to message', () => {
    expectSplitInvariant('event: update\ndata: {"a":1}\nid: 42\n\ndata: plain\n\n', [
      { event: 'update', data: '{"a":1}', id: '42' },
      { event: 'message', data: 'plain', id: '42' },
    ]);
  });

  it('treats CRLF, CR and LF alike, including a CRLF split across chunks', () => {
    const expected = [
      { event: 'message', data: 'a' },
      { event: 'message', data: 'b' },
      { event: 'message', data: 'c' },
    ];
    expectSplitInvariant('data: a\r\n\r\ndata: b\r\rdata: c\n\n', expected);
    expect(parse(['data: a\r', '\n\r', '\ndata: b\r', '\r', 'data: c\n', '\n'])).toEqual(expected);
  });

  it('joins multi-line data with LF and keeps an empty data line', () => {
    expectSplitInvariant('data: one\ndata:\ndata:  two\n\n', [{ event: 'message', data: 'one\n\n two' }]);
  });

  it('dispatches an event whose only field is an empty data line', () => {
    expect(parse(['data\n\n'])).toEqual([{ event: 'message', data: '' }]);
  });

  it('ignores comments, unknown fields, and blocks without data (whose event type is reset)', () => {
    expectSplitInvariant(': keep-alive\nfoo: bar\nevent: ignored\n\n:another\ndata: x\n\n', [{ event: 'message', data: 'x' }]);
  });

  it('strips exactly one space after the colon and takes a line without colon as a field name', () => {
    expect(parse(['data:no-space\n\ndata:   three\n\nevent\ndata: d\n\n'])).toEqual([
      { event: 'message', data: 'no-space' },
      { event: 'message', data: '  three' },
      { event: 'message', data: 'd' },
    ]);
  });

  it('keeps the last id across events, ignores an id with NUL, and clears it with an empty id', () => {
    expect(parse(['id: 1\ndata: a\n\ndata: b\n\nid: x\u0000y\ndata: c\n\nid\ndata: d\n\n'])).toEqual([
      { event: 'message', data: 'a', id: '1' },
      { event: 'message', data: 'b', id: '1' },
      { event: 'message', data: 'c', id: '1' },
      { event: 'message', data: 'd' },
    ]);
  });

  it('takes retry only when it is all digits, and carries a retry-only block to the next event', () => {
    expect(parse(['retry: 3000\n\ndata: a\n\nretry: 12x\ndata: b\n\nretry: 50\ndata: c\n\n'])).toEqual([
      { event: 'message', data: 'a', retry: 3000 },
      { event: 'message', data: 'b' },
      { event: 'message', data: 'c', retry: 50 },
    ]);
  });

  it('drops one leading BOM, even on its own, but not a BOM later in the stream', () => {
    expect(parse(['\uFEFFdata: a\n\n'])).toEqual([{ event: 'message', data: 'a' }]);
    expect(parse(['', '\uFEFF', 'data: a\n\n'])).toEqual([{ event: 'message', data: 'a' }]);
    expect(parse(['data: a\n\n\uFEFFdata: b\n\n'])).toEqual([{ event: 'message', data: 'a' }]);
  });

  it('discards an unfinished event at the end of the stream', () => {
    expect(parse(['data: done\n\ndata: half'])).toEqual([{ event: 'message', data: 'done' }]);
    expect(parse(['data: done\n\ndata: half\n'])).toEqual([{ event: 'message', data: 'done' }]);
  });

  it('throws OUTPUT_TOO_LARGE when one event grows past the cap across many lines', () => {
    const decoder = createSseDecoder({ maxEventBytes: 100 });
    const events: SseEvent[] = [];
    const feed = () => {
      for (let i = 0; i < 20; i++) decoder.push('data: 0123456789\n', (event) => events.push(event));
    };
    expect(feed).toThrow(KiwiError);
    expect(feed).toThrow(/100-byte cap \(maxEventBytes\)/);
    expect(events).toEqual([]);
  });

  it('throws OUTPUT_TOO_LARGE on a single line without end that passes the cap, counting UTF-8 bytes', () => {
    const decoder = createSseDecoder({ maxEventBytes: 10 });
    expect(() => decoder.push('data: ééé', () => undefined)).toThrow(/cap/); // 6 + 6 bytes
    const events: SseEvent[] = [];
    expect(() => createSseDecoder({ maxEventBytes: 64 }).push('data: ok\n\n: ' + 'c'.repeat(100), (e) => events.push(e))).toThrow(
      expect.objectContaining({ code: 'OUTPUT_TOO_LARGE' }),
    );
    expect(events).toEqual([{ event: 'message', data: 'ok' }]);
  });

  it('counts the cap in UTF-8 bytes to the byte: the line being read, then the data with its line feeds', () => {
    // "data: €€" is 12 bytes while it is read; its data, "€€" and the spec's line feed, 7.
    expect(() => parse(['data: €€\n\n'], { maxEventBytes: 11 })).toThrow(/11-byte cap/);
    expect(parse(['data: €€\n\n'], { maxEventBytes: 12 })).toEqual([{ event: 'message', data: '€€' }]);
    // Two lines of it: the second is read beside the 7 bytes of data the first left.
    expect(() => parse(['data: €€\ndata: €€\n\n'], { maxEventBytes: 18 })).toThrow(/18-byte cap/);
    expect(parse(['data: €€\n', 'data: €€\n\n'], { maxEventBytes: 19 })).toEqual([{ event: 'message', data: '€€\n€€' }]);
  });

  it('lets many small events through a small cap, since the cap is per event', () => {
    const text = 'data: 0123456789\n\n'.repeat(1000);
    expect(parse([text], { maxEventBytes: 32 })).toHaveLength(1000);
  });

  it('refuses a cap that is not a positive integer', () => {
    for (const maxEventBytes of [0, -1, 1.5, Number.NaN]) {
      expect(() => createSseDecoder({ maxEventBytes })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    }
  });
});

describe('SSE parser (TransformStream)', () => {
  async function run(chunks: string[], options?: SseParserOptions): Promise<SseEvent[]> {
    const source = new ReadableStream<string>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    const events: SseEvent[] = [];
    for await (const event of source.pipeThrough(createSseParser(options))) events.push(event);
    return events;
  }

  it('turns text chunks into events, across chunk boundaries', async () => {
    expect(await run(['\uFEFFev', 'ent: a\r', '\ndata: x', 'y\r\n', '\r\n', 'data: z\n\n'])).toEqual([
      { event: 'a', data: 'xy' },
      { event: 'message', data: 'z' },
    ]);
  });

  it('errors the stream with OUTPUT_TOO_LARGE past the cap', async () => {
    await expect(run(['data: ', 'x'.repeat(50)], { maxEventBytes: 16 })).rejects.toMatchObject({ code: 'OUTPUT_TOO_LARGE' });
  });

  it('decodes bytes when piped after a TextDecoderStream, with a character split across chunks', async () => {
    const bytes = new TextEncoder().encode('data: ü\n\n');
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
        controller.close();
      },
    });
    const events: SseEvent[] = [];
    for await (const event of source.pipeThrough(new TextDecoderStream()).pipeThrough(createSseParser())) events.push(event);
    expect(events).toEqual([{ event: 'message', data: 'ü' }]);
  });
});
