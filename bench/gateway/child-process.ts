import { fork, type ChildProcess } from 'node:child_process';

/**
 * A bench helper process (bench-child.ts, or another `entry` speaking the same messages) and a
 * call-and-answer channel over IPC. The child inherits this process's execArgv, which under tsx
 * carries its TypeScript loader.
 */

export interface BenchChild<Ready> {
  ready: Ready;
  call<T>(cmd: string, args: unknown): Promise<T>;
  /** Asks it to exit, and kills it if it has not after a second. */
  close(): Promise<void>;
}

type Message = { ready?: unknown; id?: number; result?: unknown; error?: string };

export async function startBenchChild<Ready>(args: string[], signal?: AbortSignal, entry: URL = new URL('./bench-child.ts', import.meta.url)): Promise<BenchChild<Ready>> {
  const child: ChildProcess = fork(entry, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let nextId = 1;
  let exited = false;
  const onAbort = (): void => void close();
  signal?.addEventListener('abort', onAbort, { once: true });
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<Ready>((resolve, reject) => {
    child.on('message', (m: Message) => {
      if (m.ready !== undefined) resolve(m.ready as Ready);
      const p = m.id === undefined ? undefined : pending.get(m.id);
      if (p === undefined || m.id === undefined) return;
      pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(m.error));
      else p.resolve(m.result);
    });
    child.once('exit', (code) => {
      exited = true;
      const error = new Error(`bench helper (${args.join(' ')}) exited with code ${String(code)}`);
      reject(error);
      for (const p of pending.values()) p.reject(error);
      pending.clear();
    });
    child.once('error', reject);
  });
  const close = async (): Promise<void> => {
    signal?.removeEventListener('abort', onAbort);
    if (exited) return;
    if (child.connected) child.send({ cmd: 'close' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 1000);
    await exit;
    clearTimeout(timer);
  };
  try {
    return {
      ready: await ready,
      call: <T>(cmd: string, callArgs: unknown) =>
        new Promise<T>((resolve, reject) => {
          if (exited || !child.connected) return reject(new Error(`bench helper (${args.join(' ')}) is not running`));
          const id = nextId++;
          pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
          child.send({ id, cmd, args: callArgs });
        }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
