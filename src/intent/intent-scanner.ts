import { KiwiError } from '../base/errors.js';
import { textTail } from '../base/text-cut.js';
import { DEFAULT_MARKER, checkMarker } from './intent-marker.js';

export { intentInstructions } from './intent-instructions.js';

/**
 * Events, in stream order. Nothing is dropped or repeated: joining every `text` event's `text`
 * with every `intent`/`invalid` event's `raw` gives back exactly the input.
 */
export type ScanEvent =
  /** Agent text to pass through to the client as-is (everything outside intents). */
  | { type: 'text'; text: string }
  /** `text` is the trimmed inside of `[TOOL: …]` with `\]`/`\[` unescaped; `raw` the whole bracketed source; `index` counts intents (not invalids) from 0. */
  | { type: 'intent'; text: string; raw: string; index: number }
  /**
   * Something that opened as an intent but cannot be one: empty, over the size cap, or still
   * open when the stream ended. `raw` is the source it swallowed; it is NOT also sent as text,
   * so a consumer that wants the client to see every character forwards `raw` as text.
   */
  | { type: 'invalid'; raw: string; reason: string };

export interface IntentScanner {
  /** Events completed by this delta, in order; adjacent text is merged into one event. */
  push(delta: string): ScanEvent[];
  /**
   * Flushes at the end of the stream: a held-back partial opening (`[TO`) comes out as text, an
   * intent without its closing `]` as `invalid`. Calling it again returns nothing; `push` after
   * it throws.
   */
  end(): ScanEvent[];
  /** The last `maxTranscriptChars` UTF-16 units pushed, intents included, for prefetch snapshots. */
  readonly transcript: string;
  /** How many UTF-16 units have been pushed in all (the transcript may hold fewer). */
  readonly charsSeen: number;
  /** The inside of an intent still being written (raw, escapes kept), or undefined between intents: prefetch predicts from it. */
  readonly openIntent: string | undefined;
}

export interface IntentScannerOptions {
  /** Longest intent, opening and closing bracket included (default 2000). */
  maxIntentChars?: number;
  /** The word after `[`, matched case-insensitively (default `TOOL`). */
  marker?: string;
  /** How much of the stream `transcript` keeps, newest last (default 65536). */
  maxTranscriptChars?: number;
}

export const DEFAULT_MAX_INTENT_CHARS = 2000;
export const DEFAULT_MAX_TRANSCRIPT_CHARS = 64 * 1024;
/** Spaces or tabs allowed on each side of the marker: `[  TOOL :`. More is not an opening. */
const MAX_OPENING_SPACES = 8;
const MIN_INTENT_CHARS = 64;
const MAX_INTENT_CHARS_LIMIT = 1_000_000;

const enum Mode {
  Text,
  Opening,
  Body,
}

const SPACE = 0x20;
const TAB = 0x09;
const BACKSLASH = 0x5c;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const COLON = 0x3a;
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;
const BACKTICK = 0x60;

/**
 * An incremental scanner for `[TOOL: …]` intents in streamed agent text. Pure and synchronous:
 * the cost is linear in the input and memory is bounded by the caps, whatever the input.
 *
 * - The opening is `[`, up to 8 spaces/tabs, the marker (any case), up to 8 spaces/tabs, `:`.
 *   Only the shortest suffix that could still become an opening (`[`, `[ T`, `[TOO`) is held
 *   back; any other bracket (`[1]`, `[TODO: x]`, `[a](b)`) is released as text at once.
 * - Inside, `]` closes unless it is escaped (`\]`), inside a quote, or balances a nested `[`.
 *   A quote (`"`, `'`, `` ` ``) opens only at the start of a word, so apostrophes in `John's`
 *   or inch marks in `5"` do not; backslash escapes work inside quotes too.
 * - Intents are recognised anywhere, code blocks included: the agent is told to write them only
 *   when it means them, and guessing at Markdown structure mid-stream would hold text back.
 * - An intent reaching `maxIntentChars` without its `]` becomes `invalid` with the text so far
 *   (never splitting a surrogate pair), and scanning goes on as plain text right after it: the
 *   rest of that overlong intent, closing `]` included, comes out as text.
 */
export function createIntentScanner(options: IntentScannerOptions = {}): IntentScanner {
  // ASCII codes compared directly: `toLowerCase` would also map the Kelvin sign onto "k".
  const markerCodes = Array.from(checkMarker(options.marker ?? DEFAULT_MARKER), (ch) => lowerAscii(ch.charCodeAt(0)));
  const maxIntentChars = checkCount('maxIntentChars', options.maxIntentChars, DEFAULT_MAX_INTENT_CHARS, MIN_INTENT_CHARS, MAX_INTENT_CHARS_LIMIT);
  const maxTranscriptChars = checkCount('maxTranscriptChars', options.maxTranscriptChars, DEFAULT_MAX_TRANSCRIPT_CHARS, 0, Number.MAX_SAFE_INTEGER);

  let mode = Mode.Text;
  let ended = false;
  let intentIndex = 0;
  let transcript = '';
  let charsSeen = 0;
  // Opening: what is held back, and how far through `[ marker :` it got.
  let held = '';
  let spacesBefore = 0;
  let matched = 0;
  let spacesAfter = 0;
  // Body: the raw source so far (opening included) and the state that decides what `]` means.
  let body = '';
  let insideStart = 0;
  let quote = 0;
  let escaped = false;
  let depth = 0;
  let afterWordChar = false;

  let pendingText = '';
  let events: ScanEvent[] = [];

  const flushText = () => {
    if (pendingText.length > 0) events.push({ type: 'text', text: pendingText });
    pendingText = '';
  };
  const emit = (event: ScanEvent) => {
    flushText();
    events.push(event);
  };

  const finishBody = (raw: string) => {
    mode = Mode.Text;
    body = '';
    const text = unescapeBrackets(raw.slice(insideStart, raw.length - 1)).trim();
    if (text.length === 0) emit({ type: 'invalid', raw, reason: 'empty intent: nothing was written between the ":" and the "]"' });
    else emit({ type: 'intent', text, raw, index: intentIndex++ });
  };

  /** Feeds one character of a possible opening; false means it is not one and `c` must be rescanned as text. */
  const feedOpening = (c: number, ch: string): boolean => {
    if (matched === 0 && (c === SPACE || c === TAB)) {
      if (++spacesBefore > MAX_OPENING_SPACES) return false;
    } else if (matched < markerCodes.length) {
      if (lowerAscii(c) !== markerCodes[matched]) return false;
      matched++;
    } else if (c === SPACE || c === TAB) {
      if (++spacesAfter > MAX_OPENING_SPACES) return false;
    } else if (c === COLON) {
      mode = Mode.Body;
      body = held + ch;
      insideStart = body.length;
      held = '';
      quote = 0;
      escaped = false;
      depth = 0;
      afterWordChar = false;
      return true;
    } else {
      return false;
    }
    held += ch;
    return true;
  };

  /** Scans the body from `start`; returns where scanning goes on (the chunk length if the intent is still open). */
  const scanBody = (chunk: string, start: number): number => {
    const room = maxIntentChars - body.length;
    const stop = Math.min(chunk.length, start + room);
    for (let i = start; i < stop; i++) {
      const c = chunk.charCodeAt(i);
      if (escaped) {
        escaped = false;
      } else if (c === BACKSLASH) {
        escaped = true;
        continue;
      } else if (quote !== 0) {
        if (c === quote) quote = 0;
        afterWordChar = false;
        continue;
      } else if ((c === DOUBLE_QUOTE || c === SINGLE_QUOTE || c === BACKTICK) && !afterWordChar) {
        quote = c;
        continue;
      } else if (c === OPEN) {
        depth++;
      } else if (c === CLOSE) {
        if (depth === 0) {
          finishBody(body + chunk.slice(start, i + 1));
          return i + 1;
        }
        depth--;
      }
      afterWordChar = isWordChar(c);
    }
    if (stop === chunk.length && chunk.length - start < room) {
      body += chunk.slice(start);
      return chunk.length;
    }
    // The cap is reached without a closing `]`: give up on this intent, keep the stream going.
    let cut = stop;
    if (isHighSurrogate(chunk.charCodeAt(cut - 1))) cut--;
    const raw = body + chunk.slice(start, cut);
    mode = Mode.Text;
    body = '';
    emit({ type: 'invalid', raw, reason: `intent is longer than ${maxIntentChars} characters without its closing "]"; the rest of it is passed on as text` });
    return cut;
  };

  const scan = (chunk: string) => {
    let i = 0;
    while (i < chunk.length) {
      if (mode === Mode.Text) {
        const open = chunk.indexOf('[', i);
        if (open < 0) {
          pendingText += i === 0 ? chunk : chunk.slice(i);
          return;
        }
        if (open > i) pendingText += chunk.slice(i, open);
        mode = Mode.Opening;
        held = '[';
        spacesBefore = matched = spacesAfter = 0;
        i = open + 1;
      } else if (mode === Mode.Opening) {
        const ch = chunk[i] as string;
        if (feedOpening(chunk.charCodeAt(i), ch)) {
          i++;
        } else {
          // The held text has exactly one `[`, at its start, so nothing in it can begin another opening.
          pendingText += held;
          held = '';
          mode = Mode.Text;
        }
      } else {
        i = scanBody(chunk, i);
      }
    }
  };

  const take = (): ScanEvent[] => {
    flushText();
    const out = events;
    events = [];
    return out;
  };

  return {
    push(delta) {
      if (ended) throw new KiwiError('INVALID_INPUT', 'The intent scanner has ended; create a new scanner for each stream.');
      if (typeof delta !== 'string') throw new KiwiError('INVALID_INPUT', `An intent scanner takes text deltas (strings), not ${typeof delta}.`);
      if (delta.length === 0) return [];
      charsSeen += delta.length;
      if (maxTranscriptChars > 0) {
        transcript += delta;
        // Trim in batches so appending stays amortised linear; the getter trims the rest.
        if (transcript.length > 2 * maxTranscriptChars) transcript = transcript.slice(-maxTranscriptChars);
      }
      scan(delta);
      return take();
    },
    end() {
      if (ended) return [];
      ended = true;
      if (mode === Mode.Opening) pendingText += held;
      else if (mode === Mode.Body) emit({ type: 'invalid', raw: body, reason: 'unclosed intent: the stream ended before its closing "]"' });
      held = body = '';
      mode = Mode.Text;
      return take();
    },
    get transcript() {
      return textTail(transcript, maxTranscriptChars);
    },
    get charsSeen() {
      return charsSeen;
    },
    get openIntent() {
      return mode === Mode.Body ? body.slice(insideStart) : undefined;
    },
  };
}

function checkCount(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new KiwiError('INVALID_INPUT', `Intent scanner option ${name} must be an integer from ${min} to ${max}, got ${String(value)}; leave it out for ${fallback}.`);
  }
  return value;
}

/** `\]` and `\[` stand for the bracket itself; other backslashes (paths, regexes) are kept as written. */
function unescapeBrackets(text: string): string {
  return text.includes('\\') ? text.replace(/\\([\s\S])/g, (pair, next: string) => (next === '[' || next === ']' ? next : pair)) : text;
}

const NON_ASCII_WORD = /[\p{L}\p{N}\p{M}]/u;

/** Letters and digits: a quote right after one is an apostrophe or a unit mark, not an opening quote. */
function isWordChar(c: number): boolean {
  if (c < 0x80) return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
  if (c >= 0xd800 && c <= 0xdfff) return false;
  return NON_ASCII_WORD.test(String.fromCharCode(c));
}

function lowerAscii(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
