import { pick } from '../scale/seeded.js';

/**
 * The agent's words before an intent, for the prefetch traces. An "announced" step says what it
 * is about to do, in the first person, from the first part of the user's sub-request ("Next I'll
 * check the status of the MySQL database."), the way agents narrate before they act; a "silent"
 * step says nothing about it ("Next step."), which is where prediction from text cannot work.
 */

const LEAD_INS = [
  /^(?:please|kindly)\s+/i,
  /^(?:can|could|would)\s+you(?:\s+please)?(?:\s+also)?\s+/i,
  /^(?:please\s+)?help\s+me(?:\s+to)?\s+/i,
  /^(?:i|we)(?:\s+would|'d|\s+also)?\s+(?:like|want|need)\s+you\s+to\s+/i,
  /^(?:i|we)(?:\s+would|'d|\s+will)?(?:\s+also)?\s+(?:like|want|need|wish|have|plan|hope)\s+to\s+/i,
  /^(?:i|we)(?:\s+am|'m|\s+are|'re)\s+(?:also\s+)?(?:going|planning|trying|looking)\s+to\s+/i,
  /^let(?:'s|\s+us|\s+me)\s+/i,
];

/** Requests for a thing rather than an action: the agent will get it. */
const NOUN_REQUESTS: Array<[RegExp, string]> = [
  [/^(?:i|we)(?:\s+would|'d)?(?:\s+also)?\s+(?:need|want|require|like)\s+(?:your\s+)?(?:assistance|help)\s+(?:in|with)\s+/i, 'work on '],
  [/^(?:i|we)(?:\s+would|'d)?(?:\s+also)?\s+(?:need|want|require|like)\s+(?!to\b)/i, 'get '],
  [/^(?:i|we)(?:\s+am|'m|\s+are|'re)\s+(?:also\s+)?(?:interested\s+in|curious\s+about)\s+/i, 'look into '],
  [/^(?:provide|give|show|send)\s+(?:me|us)\s+(?:with\s+)?/i, 'get '],
  [/^(?:provide|give)\s+(?!me\b|us\b)/i, 'get '],
  [/^tell\s+(?:me|us)\s+(?:about\s+)?/i, 'look up '],
  [/^(?:know|learn|understand)\s+/i, 'find out '],
];

const PERSON: Array<[RegExp, string]> = [
  [/\bI am\b/g, 'you are'],
  [/\bI'm\b/g, "you're"],
  [/\bI\b/g, 'you'],
  [/\b(?:me|us)\b/gi, 'you'],
  [/\b(?:my|our)\b/gi, 'your'],
  [/\b(?:mine|ours)\b/gi, 'yours'],
  [/\bwe\b/gi, 'you'],
];

/** Where a step's first part ends: the details after it are the intent's job. */
const CUTS = [',', ';', ' (', ' and provide', ' and ', ' with ', ' using ', ' based on ', ' by ', ' so that ', ' in order to ', ' which ', ' who ', ' that ', ' where ', ' including ', ' such as ', ' for the period', ' from ', ' at '];
const MIN_WORDS = 4;
const TRAILING = /\s+(?:or|and|to|the|a|an|of|for|in|on|at|by|is|are|if|as|about|whether|named|called|with|from|into)$/i;
const MAX_WORDS = 12;

/** "check the status of the MySQL database": the first part of a step, as something the agent will do. */
export function firstPersonStep(action: string): string {
  let s = action.trim().replace(/[.?!]+$/, '');
  for (let changed = true; changed; ) {
    changed = false;
    for (const re of LEAD_INS) {
      const next = s.replace(re, '');
      if (next !== s) [s, changed] = [next, true];
    }
  }
  for (const [re, verb] of NOUN_REQUESTS) {
    if (re.test(s)) {
      s = s.replace(re, verb);
      break;
    }
  }
  if (/^\w+ing\b/i.test(s)) s = `work on ${s}`;
  for (const [re, to] of PERSON) s = s.replace(re, to);
  s = shorten(s);
  // Keep acronyms ("AWS …") as they are.
  return /^[A-Z][A-Z]/.test(s) ? s : s.charAt(0).toLowerCase() + s.slice(1);
}

function shorten(s: string): string {
  let end = s.length;
  for (const cut of CUTS) {
    let at = s.indexOf(cut);
    while (at >= 0 && wordCount(s.slice(0, at)) < MIN_WORDS) at = s.indexOf(cut, at + 1);
    if (at >= 0 && at < end) end = at;
  }
  const words = s.slice(0, end).trim().split(/\s+/);
  let out = words.slice(0, MAX_WORDS).join(' ').replace(/[,;:]+$/, '');
  return trimTrailing(out, MIN_WORDS);
}

/** A cut must not leave the phrase hanging on "to the" or "or". */
function trimTrailing(phrase: string, minWords: number): string {
  let out = phrase;
  while (TRAILING.test(out) && wordCount(out) > minWords) out = out.replace(TRAILING, '');
  return out;
}

function wordCount(s: string): number {
  return s.trim() ? s.trim().split(/\s+/).length : 0;
}

export type Position = 'first' | 'middle' | 'last';

const ANNOUNCED: Record<Position, string[]> = {
  first: ["First, I'll {step}.", "Let me start: I'll {step}.", 'To begin, let me {step}.'],
  middle: ["Next I'll {step}.", "Now I'll {step}.", 'Next, let me {step}.', 'Now let me {step}.'],
  last: ["Finally, I'll {step}.", "Last step: I'll {step}.", 'Finally, let me {step}.'],
};

const SILENT: Record<Position, string[]> = {
  first: ['Starting.', 'Step one.'],
  middle: ['Next step.', 'Continuing.', 'On to the next one.'],
  last: ['Last step.', 'One more.'],
};

export function announcement(step: string, position: Position, random: () => number): string {
  return pick(ANNOUNCED[position], random).replace('{step}', step);
}

export function silentLine(position: Position, random: () => number): string {
  return pick(SILENT[position], random);
}

/** The one-line plan the first turn opens with: the steps' first words, or (silent) only how many there are. */
export function planLine(steps: string[], silent: boolean): string {
  if (silent) return `I'll work through this in ${steps.length} steps.`;
  const short = steps.map((s) => trimTrailing(s.split(/\s+/).slice(0, 5).join(' '), 2));
  const list = short.length > 1 ? `${short.slice(0, -1).join(', ')}, then ${short.at(-1)}` : (short[0] ?? '');
  return `Plan: ${list}.`;
}
