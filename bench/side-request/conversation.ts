import { uniform } from '../scale/seeded.js';

/**
 * The earlier turns of a chat, made up deterministically: what an agent's client re-sends on every
 * model turn. Sizes are those of a working session with a coding assistant (a user writes a few
 * sentences, the assistant answers with a few paragraphs); the words are drawn from a plain
 * vocabulary of such sessions, with no brackets, so nothing in them can open an intent.
 */

export interface ConversationShape {
  /** Earlier user/assistant pairs. */
  turns: number;
  /** Words of a user message, drawn uniformly from this range. */
  userWords: [min: number, max: number];
  /** Words of an assistant reply. */
  assistantWords: [min: number, max: number];
}

export const DEFAULT_SHAPE: ConversationShape = { turns: 20, userWords: [20, 80], assistantWords: [120, 360] };

export interface ChatTurn {
  role: 'user' | 'assistant';
  content: string;
}

const WORDS = (
  'the a this that these our your its project file files function module test tests build change changes branch commit review ' +
  'error errors value values config setting settings option request response server client cache index table query schema field ' +
  'user users account order orders report reports page pages list item items date time week month step steps plan note notes ' +
  'check checks run runs add adds remove update updates fix fixes read write move keep use make look find show explain compare ' +
  'should could would will can may might must first then next after before again still also only just both each every other ' +
  'new old large small slow fast simple clear wrong right missing empty local remote shared main current earlier later ' +
  'because when where while since unless so but and or with without from into over under about between through for to of in on at by ' +
  'I we you it they is are was were be been has have had do does did not no more less most some any all many few'
).split(' ');

/** A sentence of 6 to 18 words, capitalised, ending in a full stop. */
function sentence(next: () => number, maxWords: number): string {
  const n = Math.min(maxWords, 6 + Math.floor(next() * 13));
  const words = Array.from({ length: n }, () => WORDS[Math.floor(next() * WORDS.length)] as string);
  const first = words[0] as string;
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  return `${words.join(' ')}.`;
}

/** About `words` words of sentences; an assistant's text falls into paragraphs of about 60 words. */
function text(next: () => number, words: number, paragraphs: boolean): string {
  const parts: string[] = [];
  let count = 0;
  let inParagraph = 0;
  while (count < words) {
    const s = sentence(next, words - count);
    const n = s.split(' ').length;
    count += n;
    inParagraph += n;
    const breakHere = paragraphs && inParagraph >= 60 && count < words;
    parts.push(breakHere ? `${s}\n\n` : `${s} `);
    if (breakHere) inParagraph = 0;
  }
  return parts.join('').trim();
}

function between(next: () => number, [min, max]: [number, number]): number {
  return min + Math.floor(next() * (max - min + 1));
}

/** `shape.turns` user/assistant pairs, the same for the same seed. */
export function earlierTurns(seed: number, shape: ConversationShape = DEFAULT_SHAPE): ChatTurn[] {
  const next = uniform(seed);
  const out: ChatTurn[] = [];
  for (let i = 0; i < shape.turns; i++) {
    out.push({ role: 'user', content: text(next, between(next, shape.userWords), false) });
    out.push({ role: 'assistant', content: text(next, between(next, shape.assistantWords), true) });
  }
  return out;
}
