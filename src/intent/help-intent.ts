import { helpSignal, isHelpAction, type HelpSignal } from '../proxy/help-signal.js';

/**
 * A thread's help signal written as an intent: `[TOOL: help stuck: cannot find the config file]`,
 * `help escalate: …` or `help checkpoint: …`: the word `help`, the action, a colon, the message
 * (the colon may be left out). Read before the intent goes to the resolver, so no tool is ever run
 * for it; anything else that starts with "help" (`help me find the config`) resolves as usual.
 */

const FORM = /^help\s+([a-z]+)\b[\s:]*([\s\S]*)$/i;

/** The signal an intent writes, or undefined when it is not one. */
export function parseHelpIntent(intent: string): HelpSignal | undefined {
  const match = FORM.exec(intent.trim());
  const action = match?.[1]?.toLowerCase();
  if (match === null || action === undefined || !isHelpAction(action)) return undefined;
  return helpSignal(action, match[2] ?? '');
}

/** The lines of a thread's system prompt that teach the form (`marker` is the intent marker, `TOOL` by default). */
export function helpIntentInstructions(marker: string): string {
  return [
    'If you cannot go on, signal it with an intent instead of guessing:',
    `- [${marker}: help stuck: what blocks you] records that you are stuck; then try another way, or finish with what you have.`,
    `- [${marker}: help escalate: what a person must decide] ends this run; your message goes to whoever started it.`,
    `- [${marker}: help checkpoint: what is done so far] records progress (and saves the work tree when git checkpoints are on).`,
  ].join('\n');
}
