/**
 * The child's side of child-process.ts: tells the bench process it is ready, answers its
 * commands over IPC (`{id, cmd, args}` → `{id, result}` or `{id, error}`), and closes and exits
 * when told to (`close`) or when the bench process goes away (the IPC channel closes).
 */

type Request = { id: number; cmd: string; args: unknown };

export interface ChildService {
  /** What the `ready` message carries (an upstream's URL). */
  ready: unknown;
  close(): Promise<void>;
  /** Answers one command; a child without commands leaves it out and refuses them. */
  run?(cmd: string, args: unknown): Promise<unknown> | unknown;
}

export function serveChild(service: ChildService): void {
  const send = (message: unknown): void => {
    process.send?.(message);
  };
  const stop = async (): Promise<void> => {
    await service.close().catch(() => undefined);
    process.exit(0);
  };
  process.on('disconnect', () => void stop());
  process.on('message', (m: Request) => {
    if (m.cmd === 'close') return void stop();
    if (service.run === undefined) return send({ id: m.id, error: `unknown command ${m.cmd}` });
    Promise.resolve()
      .then(() => service.run?.(m.cmd, m.args))
      .then(
        (result) => send({ id: m.id, result }),
        (error: unknown) => send({ id: m.id, error: error instanceof Error ? error.message : String(error) }),
      );
  });
  send({ ready: service.ready });
}

/** Runs a child's main; a failure to start is printed and ends the process. */
export function childMain(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
