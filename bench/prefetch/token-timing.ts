import { gaussian, uniform } from '../scale/seeded.js';
import type { TraceChunk } from './trace-format.js';

/** How fast a simulated model streams: a rate drawn per trace, jitter per token. */
export interface StreamTiming {
  /** Tokens per second are drawn uniformly from this range, once per trace (default 40–60). */
  minTokensPerSecond: number;
  maxTokensPerSecond: number;
  /** Spread of one token's interval around the mean (log-normal sigma, default 0.35). */
  jitter: number;
}

export const DEFAULT_STREAM_TIMING: StreamTiming = { minTokensPerSecond: 40, maxTokensPerSecond: 60, jitter: 0.35 };

/** Longest piece of a word in one token; longer words are cut into pieces of about 5 characters, as BPE vocabularies do. */
const MAX_PIECE = 9;
const PIECE = 5;

/**
 * Splits text into token-like pieces of about 4 characters (a leading space stays with its
 * word, punctuation is its own token, digits go three at a time). Joining them gives the text back.
 */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const m of text.matchAll(/ ?[A-Za-z]+| ?\d{1,3}|\s+|[^\sA-Za-z\d]/gu)) {
    const word = m[0];
    if (word.length <= MAX_PIECE) {
      tokens.push(word);
      continue;
    }
    // A long word: the first piece keeps the space, the rest are cut evenly.
    const parts = Math.ceil(word.length / PIECE);
    const size = Math.ceil(word.length / parts);
    for (let i = 0; i < word.length; i += size) tokens.push(word.slice(i, i + size));
  }
  return tokens;
}

/** A streaming clock for one trace: the rate is drawn once, every token's interval jitters around it. */
export function createStreamClock(seed: number, timing: StreamTiming = DEFAULT_STREAM_TIMING): (tokens: readonly string[]) => TraceChunk[] {
  const draw = uniform(seed);
  const noise = gaussian(seed ^ 0x5bd1e995);
  const rate = timing.minTokensPerSecond + draw() * (timing.maxTokensPerSecond - timing.minTokensPerSecond);
  const mean = 1000 / rate;
  // Log-normal with mean 1, so the drawn rate is also the average rate.
  const factor = () => Math.exp(timing.jitter * noise() - (timing.jitter * timing.jitter) / 2);
  return (tokens) => {
    let t = 0;
    return tokens.map((text, i) => {
      if (i > 0) t += mean * factor();
      return { t: Math.round(t), text };
    });
  };
}
