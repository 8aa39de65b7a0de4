import { KiwiError } from '../base/errors.js';
import type { Snapshot } from './types.js';
import { textTail } from '../base/text-cut.js';

export interface SnapshotterOptions {
  /** A snapshot after this many new characters, sentence end or not (default 100). */
  everyChars?: number;
  /** How much of the text since the last intent a snapshot keeps (default 400). */
  windowChars?: number;
  /** A sentence end makes a snapshot only after this many new characters (default 24). */
  minChars?: number;
  /** Longest query: the last sentence or two, cut here (default 200). */
  queryChars?: number;
}

export interface Snapshotter {
  /** Takes the next streamed text; returns a snapshot when one is due. */
  push(text: string): Snapshot | undefined;
  /** An intent closed: the next intent's context starts after it. */
  reset(): void;
}

const LIMITS = { everyChars: [1, 100_000], windowChars: [16, 1_000_000], minChars: [0, 100_000], queryChars: [16, 100_000] } as const;

// A sentence ends at . ! ? or : followed by a space (or the end of the chunk), or at a newline.
const SENTENCE_END = /[.!?:](?:\s|$)|\n/;
const BOUNDARY = /[.!?:]\s+|\n\s*/g;

/**
 * Cuts the agent's streamed text into snapshots for prediction: every `everyChars` new
 * characters, or sooner at a sentence end, which is where an intent is most often announced
 * ("…I'll look up each company's domain."). Pure and cheap: `push` looks only at the new chunk,
 * and the buffer is trimmed to the window before it grows past twice its size.
 */
export function createSnapshotter(options: SnapshotterOptions = {}): Snapshotter {
  const everyChars = check('everyChars', options.everyChars ?? 100);
  const windowChars = check('windowChars', options.windowChars ?? 400);
  const minChars = check('minChars', options.minChars ?? 24);
  const queryChars = check('queryChars', options.queryChars ?? 200);
  if (minChars > everyChars) {
    throw new KiwiError('INVALID_INPUT', `snapshotter minChars (${minChars}) is above everyChars (${everyChars}); a sentence end could never trigger a snapshot earlier: lower minChars`);
  }
  let buffer = '';
  let fresh = 0;
  let seen = 0;

  return {
    push(text) {
      if (text.length === 0) return undefined;
      seen += text.length;
      fresh += text.length;
      buffer += text;
      if (buffer.length > 2 * windowChars) buffer = textTail(buffer, windowChars);
      if (fresh < everyChars && !(fresh >= minChars && SENTENCE_END.test(text))) return undefined;
      const window = textTail(buffer, windowChars);
      const query = lastSentences(window, queryChars);
      if (!query) return undefined;
      fresh = 0;
      return { text: window, query, at: seen };
    },
    reset() {
      buffer = '';
      fresh = 0;
    },
  };
}

/**
 * The last sentence, with the one before it when the last is short (under a quarter of `max`:
 * an unfinished "Now I'll" says little alone), cut to `max` characters at a word start.
 */
export function lastSentences(window: string, max: number): string {
  const text = window.trimEnd();
  const starts = [0];
  // matchAll works on a copy of the regex: the shared constant's lastIndex is never touched.
  for (const m of text.matchAll(BOUNDARY)) {
    const end = m.index + m[0].length;
    if (end < text.length) starts.push(end);
  }
  const last = starts[starts.length - 1] as number;
  const from = text.length - last < max / 4 && starts.length > 1 ? (starts[starts.length - 2] as number) : last;
  let query = text.slice(from);
  if (query.length > max) {
    query = query.slice(query.length - max);
    const space = query.search(/\s/);
    if (space >= 0 && space < max / 4) query = query.slice(space);
  }
  return query.replace(/\s+/g, ' ').trim();
}

function check(name: keyof typeof LIMITS, value: number): number {
  const [min, max] = LIMITS[name];
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new KiwiError('INVALID_INPUT', `snapshotter ${name} must be an integer from ${min} to ${max}, got ${String(value)}; leave it out for the default`);
  }
  return value;
}
