import { startBenchUpstream } from './bench-upstream.js';
import { createLoadClient } from './load-client.js';
import { childMain, serveChild } from './serve-child.js';

/**
 * Entry of the bench's helper processes (forked by child-process.ts): `upstream CHUNKS` serves
 * the stand-in LLM, `client` runs the request phases it is asked for over IPC. Each exits when
 * told to, or when the bench process goes away (the IPC channel closes).
 */

childMain('bench-child', async () => {
  const [role, arg] = process.argv.slice(2);
  if (role === 'upstream') {
    const upstream = await startBenchUpstream({ chunks: Number(arg) });
    return serveChild({ ready: { url: upstream.url }, close: () => upstream.close() });
  }
  if (role === 'client') {
    const client = createLoadClient();
    return serveChild({ ready: {}, close: () => client.close(), run: (cmd, args) => client.run(cmd, args) });
  }
  throw new Error(`unknown role ${String(role)}; use upstream CHUNKS or client`);
});
