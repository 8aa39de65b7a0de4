import { KiwiError } from '../base/errors.js';

/**
 * An incremental `text/event-stream` parser following the WHATWG EventSource rules
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
 * lines end in CRLF, LF or CR (a CRLF split across chunks counts once); one leading BOM is
 * dropped; `:` lines are comments; one space after the colon is stripped; `data` lines join
 * with LF; a blank line dispatches; an event with no `data` is not dispatched; an unfinished
 * event at the end of the stream is discarded. Input is text: decode bytes first
 * (`TextDecoderStream` keeps multi-byte characters that straddle chunks intact).
 */

export interface SseEvent {
  /** The `event` field, or `message` when the event named none. */
  event: string;
  data: string;
  /** The last event id seen on the stream (ids persist across events, as in EventSource); absent while empty. */
  id?: string;
  /**
   * A `retry` value (ms) received since the previous dispatched event. A retry-only block
   * dispatches nothing, so the value rides on the next event instead of being lost.
   */
  retry?: number;
}

export interface SseParserOptions {
  /** Cap on one event: its data so far plus the line being read, in UTF-8 bytes. Default 1 MiB. */
  maxEventBytes?: number;
}

export interface SseDecoder {
  /**
   * Feeds the next piece of text; `emit` gets each event as it completes, so the events before
   * an OUTPUT_TOO_LARGE in the same chunk are delivered before the throw.
   */
  push(chunk: string, emit: (event: SseEvent) => void): void;
}

export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

/** The synchronous core, for callers that are not in a Web Streams pipeline. Throws OUTPUT_TOO_LARGE over the cap. */
export function createSseDecoder(options: SseParserOptions = {}): SseDecoder {
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  if (!Number.isSafeInteger(maxEventBytes) || maxEventBytes <= 0) {
    throw new KiwiError('INVALID_INPUT', `maxEventBytes must be a positive integer, got ${String(maxEventBytes)}`);
  }

  let bomChecked = false;
  // A chunk that ended in CR: if the next one starts with LF, that LF belongs to the same line break.
  let afterCR = false;
  /** The line read so far, when a chunk ended inside it. */
  let line = '';
  /** The event's data lines joined with LF (the spec's buffer without its last LF), once it has one. */
  let data = '';
  let hasData = false;
  let eventType = '';
  let lastEventId = '';
  let pendingRetry: number | undefined;

  /**
   * The event so far (its data, the spec's trailing LF included, and the line being read with
   * `piece`) against the cap. UTF-8 takes at most 3 bytes per UTF-16 unit, so bytes are counted
   * only near the cap: the common event costs no count.
   */
  function checkCap(piece = ''): void {
    const dataUnits = hasData ? data.length + 1 : 0;
    if ((line.length + piece.length + dataUnits) * 3 <= maxEventBytes) return;
    const bytes = Buffer.byteLength(line) + Buffer.byteLength(piece) + (hasData ? Buffer.byteLength(data) + 1 : 0);
    if (bytes > maxEventBytes) {
      throw new KiwiError(
        'OUTPUT_TOO_LARGE',
        `an SSE event exceeded the ${maxEventBytes}-byte cap (maxEventBytes) before it ended; ` +
          'raise maxEventBytes if the server really sends events this large',
        { details: { maxEventBytes } },
      );
    }
  }

  function dispatch(emit: (event: SseEvent) => void): void {
    if (!hasData) {
      eventType = '';
      return;
    }
    const event: SseEvent = { event: eventType === '' ? 'message' : eventType, data };
    if (lastEventId !== '') event.id = lastEventId;
    if (pendingRetry !== undefined) event.retry = pendingRetry;
    emit(event);
    pendingRetry = undefined;
    data = '';
    hasData = false;
    eventType = '';
  }

  function addData(value: string): void {
    if (hasData) data += `\n${value}`;
    else {
      data = value;
      hasData = true;
    }
  }

  function processLine(text: string, emit: (event: SseEvent) => void): void {
    if (text === '') return dispatch(emit);
    // The line nearly every event is: one slice for its value.
    if (text.startsWith('data:')) return addData(text.slice(text.charCodeAt(5) === SPACE ? 6 : 5));
    if (text.charCodeAt(0) === COLON) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        eventType = value;
        break;
      case 'data':
        addData(value);
        break;
      case 'id':
        if (!value.includes('\u0000')) lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) pendingRetry = Number(value);
        break;
      default:
        // Unknown fields are ignored, as the spec requires.
        break;
    }
  }

  return {
    push(chunk, emit) {
      let text = chunk;
      if (text.length === 0) return;
      if (!bomChecked) {
        bomChecked = true;
        if (text.startsWith('\uFEFF')) text = text.slice(1);
      }
      let i = 0;
      if (afterCR && text.charCodeAt(0) === LF) i = 1;
      afterCR = false;
      // The next LF and CR at or after i, each searched again only once passed.
      let nextLF = text.indexOf('\n', i);
      let nextCR = text.indexOf('\r', i);
      while (i < text.length) {
        if (nextLF !== -1 && nextLF < i) nextLF = text.indexOf('\n', i);
        if (nextCR !== -1 && nextCR < i) nextCR = text.indexOf('\r', i);
        const end = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
        if (end === -1) {
          line += text.slice(i);
          checkCap();
          break;
        }
        const piece = text.slice(i, end);
        checkCap(piece);
        const complete = line === '' ? piece : line + piece;
        line = '';
        processLine(complete, emit);
        checkCap();
        i = end + 1;
        if (text.charCodeAt(end) === CR) {
          if (i === text.length) afterCR = true;
          else if (text.charCodeAt(i) === LF) i += 1;
        }
      }
    },
  };
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const COLON = 0x3a;

/**
 * The Web Streams form: text in, events out; the stream errors with OUTPUT_TOO_LARGE over the
 * cap (erroring a stream drops what is still queued in it, so a reader may miss events that
 * completed in the same chunk as the overflow; `createSseDecoder` does not).
 */
export function createSseParser(options: SseParserOptions = {}): TransformStream<string, SseEvent> {
  const decoder = createSseDecoder(options);
  return new TransformStream<string, SseEvent>({
    transform(chunk, controller) {
      decoder.push(chunk, (event) => controller.enqueue(event));
    },
  });
}
