import type { DemoScript } from '../../src/llm/demo-provider.js';
import { seedOf } from '../scale/seeded.js';
import { hashString } from './seal-traces.js';
import { createStreamClock, tokenize, type StreamTiming } from './token-timing.js';
import { scanIntents, type Trace } from './trace-format.js';

/** What a user would have typed for each recorded conversation (the demo's own suggestions). */
const USER_REQUESTS: Record<string, string> = {
  default: 'hello',
  'what-changed': 'what changed in this repo',
  'readme-words': 'how many words are in the README',
  'package-json': 'read package.json',
  'recent-commits': 'show the recent commits',
  'denied-read': 'read /etc/passwd',
};

/**
 * One trace per recorded conversation of `.ai/demo/agent-turns.yaml`, every turn streamed with
 * the same simulated timing as the Seal-Tools traces. The demo model's "(demo model)" prefixes
 * are not part of the recording, so they are left out. Gold calls are not recorded: `gold` is null.
 */
export function demoTraces(script: DemoScript, options: { seed: number; source: string; timing?: StreamTiming }): Trace[] {
  const conversations = [
    ...(script.default ? [{ name: 'default', match: ['hello'], turns: script.default.turns }] : []),
    ...(script.conversations ?? []),
  ];
  return conversations.map((conv) => {
    const id = `demo-${conv.name}`;
    const clock = createStreamClock(seedOf(options.seed, hashString(id)), options.timing);
    const turns = conv.turns.map((raw) => {
      const text = raw.trim();
      const { intents } = scanIntents(text);
      return { chunks: clock(tokenize(text)), intents: intents.map((t) => ({ text: t, gold: null })) };
    });
    return { id, source: `${options.source}#${conv.name}`, catalog: 'demo', group: 'demo', user: USER_REQUESTS[conv.name] ?? conv.match[0] ?? conv.name, turns };
  });
}
