import { startReplayUpstream } from './replay-upstream.js';

/**
 * The side-request bench's upstream in a process of its own (forked by gateway/child-process.ts),
 * so that its JSON parsing and token counting stay off the gateway's event loop. Answers
 * `takeLog` with the requests it served since the last one; exits when told to, or when the
 * bench process goes away.
 */

type Request = { id: number; cmd: string; args: unknown };

async function main(): Promise<void> {
  const upstream = await startReplayUpstream();
  const stop = async (): Promise<void> => {
    await upstream.close();
    process.exit(0);
  };
  process.on('disconnect', () => void stop());
  process.on('message', (m: Request) => {
    if (m.cmd === 'close') void stop();
    else if (m.cmd === 'takeLog') process.send?.({ id: m.id, result: upstream.takeLog() });
    else process.send?.({ id: m.id, error: `unknown command ${m.cmd}` });
  });
  process.send?.({ ready: { url: upstream.url } });
}

main().catch((error: unknown) => {
  console.error(`replay-child: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
