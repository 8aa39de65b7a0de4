import { defineHelp, KEY_FLAG, URL_FLAG } from '../../cli/command-help.js';

export const STATS_HELP = defineHelp({
  name: 'stats',
  summary: 'prefetch counters of a running gateway (hits, misses, time saved)',
  usage: 'kiwi stats [--url URL] [--key KEY] [--json]',
  about: "The prefetch counters of a running gateway, from its GET /metrics: snapshots, predictions, prefetches, hits, misses, the hit rate, speculative runs and the time saved.",
  flags: {
    url: URL_FLAG,
    key: KEY_FLAG,
    json: { type: 'boolean', help: 'print the counters as the gateway sent them' },
  },
  examples: [{ run: 'kiwi stats' }, { run: 'kiwi stats --url http://127.0.0.1:9000 --json' }],
});
