import { DEFAULT_MARKER, checkMarker } from './intent-marker.js';

/**
 * The few lines the gateway adds to the system prompt so the agent writes intents the scanner
 * can read and the resolver can fill without guessing. Kept short (under 120 words): it is paid
 * for on every turn.
 */
export function intentInstructions(options: { marker?: string } = {}): string {
  const marker = checkMarker(options.marker ?? DEFAULT_MARKER);
  return [
    `To use a tool, write an intent in your reply: [${marker}: what to do, in plain words]. The gateway runs it and gives you the result.`,
    '- One action per intent; for several actions, write several intents.',
    '- Write every value explicitly: quote names, paths and messages ("deploy summary", "#ops"), give numbers with units (10 MB, 30 minutes) and full dates. Do not say "it" or "that" for earlier results; repeat the values.',
    '- After an intent, stop and wait for its result before you continue.',
    `- A tool the gateway has named may be called exactly: [${marker}: tool_id {"name": "value"}]. Never invent tool ids.`,
    `- A "]" inside an intent goes in quotes or is written as \\].`,
  ].join('\n');
}
