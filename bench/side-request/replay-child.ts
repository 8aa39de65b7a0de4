import { childMain, serveChild } from '../gateway/serve-child.js';
import { startReplayUpstream } from './replay-upstream.js';

/**
 * The side-request bench's upstream in a process of its own (forked by gateway/child-process.ts),
 * so that its JSON parsing and token counting stay off the gateway's event loop. Answers
 * `takeLog` with the requests it served since the last one; exits when told to, or when the
 * bench process goes away.
 */
childMain('replay-child', async () => {
  const upstream = await startReplayUpstream();
  serveChild({
    ready: { url: upstream.url },
    close: () => upstream.close(),
    run(cmd) {
      if (cmd !== 'takeLog') throw new Error(`unknown command ${cmd}`);
      return upstream.takeLog();
    },
  });
});
