import { startBenchUpstream } from './bench-upstream.js';
import { createLoadClient } from './load-client.js';

/**
 * Entry of the bench's helper processes (forked by child-process.ts): `upstream CHUNKS` serves
 * the stand-in LLM, `client` runs the request phases it is asked for over IPC. Each exits when
 * told to, or when the bench process goes away (the IPC channel closes).
 */

type Request = { id: number; cmd: string; args: unknown };

const send = (message: unknown): void => {
  process.send?.(message);
};

async function main(): Promise<void> {
  const [role, arg] = process.argv.slice(2);
  if (role === 'upstream') {
    const upstream = await startBenchUpstream({ chunks: Number(arg) });
    const stop = async (): Promise<void> => {
      await upstream.close();
      process.exit(0);
    };
    process.on('disconnect', () => void stop());
    process.on('message', (m: Request) => {
      if (m.cmd === 'close') void stop();
    });
    send({ ready: { url: upstream.url } });
    return;
  }
  if (role === 'client') {
    const client = createLoadClient();
    const stop = async (): Promise<void> => {
      await client.close().catch(() => undefined);
      process.exit(0);
    };
    process.on('disconnect', () => void stop());
    process.on('message', (m: Request) => {
      if (m.cmd === 'close') {
        void stop();
        return;
      }
      client.run(m.cmd, m.args).then(
        (result) => send({ id: m.id, result }),
        (error: unknown) => send({ id: m.id, error: error instanceof Error ? error.message : String(error) }),
      );
    });
    send({ ready: {} });
    return;
  }
  throw new Error(`bench-child: unknown role ${String(role)}; use upstream CHUNKS or client`);
}

main().catch((error: unknown) => {
  console.error(`bench-child: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
