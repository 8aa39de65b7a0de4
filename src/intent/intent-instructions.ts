import { DEFAULT_MARKER, checkMarker } from './intent-marker.js';

/**
 * What becomes of plain words the rules are not sure of: `model`, a model is asked and they run
 * once it confirms them (a fallback model is set); `asked-back`, the agent is asked back with a
 * menu and writes the exact call.
 */
export type PlainWords = 'model' | 'asked-back';

/**
 * The few lines the gateway adds to the system prompt so the agent writes intents the scanner
 * can read and the resolver can fill without guessing, and knows what becomes of plain words
 * under the current settings. Kept short (under 120 words): it is paid for on every turn.
 */
export function intentInstructions(options: { marker?: string; plainWords?: PlainWords } = {}): string {
  const marker = checkMarker(options.marker ?? DEFAULT_MARKER);
  const plain =
    options.plainWords === 'model'
      ? 'Plain words run once a model confirms the call.'
      : 'Plain words may be asked back: write the exact call from the menu.';
  return [
    `To use a tool, write an intent in your reply: [${marker}: what to do, in plain words]. The gateway runs it and returns the result.`,
    '- One action per intent; several actions, several intents.',
    '- Write every value explicitly: quote names, paths and messages ("deploy summary", "#ops"), give numbers with units (10 MB, 30 minutes) and full dates. Repeat values from earlier results, never "it".',
    '- After an intent, stop and wait for its result.',
    `- An exact call runs at once: [${marker}: tool_id {"name": "value"}], with a listed id; never invent ids. ${plain}`,
    `- A "]" inside an intent goes in quotes or is written as \\].`,
  ].join('\n');
}
