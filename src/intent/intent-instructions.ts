import { DEFAULT_MARKER, checkMarker } from './intent-marker.js';

/**
 * The few lines the gateway adds to the system prompt so the agent writes intents the scanner
 * can read and the resolver can fill without guessing. Kept short (under 120 words): it is paid
 * for on every turn.
 */
export function intentInstructions(options: { marker?: string } = {}): string {
  const marker = checkMarker(options.marker ?? DEFAULT_MARKER);
  return [
    `To use a tool, write an intent in your reply: [${marker}: what to do, in plain words]. The gateway runs it and returns the result.`,
    '- One action per intent; for several actions, write several intents.',
    '- Write every value explicitly: quote names, paths and messages ("deploy summary", "#ops"), give numbers with units (10 MB, 30 minutes) and full dates. Never say "it" for earlier results; repeat the values.',
    '- After an intent, stop and wait for its result.',
    `- An exact call runs at once: [${marker}: tool_id {"name": "value"}], with an id the gateway listed; never invent ids. Plain words may be asked back.`,
    `- A "]" inside an intent goes in quotes or is written as \\].`,
  ].join('\n');
}
