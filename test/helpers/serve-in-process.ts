import { runCli } from '../../src/app/run-cli.js';

/**
 * `kiwi serve` run in this process as the CLI runs it (`runCli`), on port 0: resolves once it
 * prints the URL it listens on, or rejects with its stderr if it exits first. `stop()` is its
 * Ctrl-C; `exit` its exit code.
 */
export interface ServedInProcess {
  base: string;
  out: string[];
  err: string[];
  stop: AbortController;
  exit: Promise<number>;
}

export async function serveInProcess(root: string, env: Record<string, string | undefined>): Promise<ServedInProcess> {
  const out: string[] = [];
  const err: string[] = [];
  const stop = new AbortController();
  let listening: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => (listening = resolve));
  const io = {
    out: (line: string) => {
      out.push(line);
      const match = /listening on (http:\S+)/.exec(line);
      if (match?.[1]) listening(match[1]);
    },
    err: (line: string) => err.push(line),
  };
  const exit = runCli(['serve', '--port', '0', '--project', root], { env, cwd: root, io, signal: stop.signal });
  const base = await Promise.race([url, exit.then((code) => Promise.reject(new Error(`serve exited ${code}: ${err.join('\n')}`)))]);
  return { base, out, err, stop, exit };
}
