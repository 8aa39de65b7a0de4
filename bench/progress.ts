/**
 * Progress on stderr: counters redrawn in place on a terminal, and in a log at most one line
 * every ~10 s; long steps without a counter print a heartbeat at the same pace.
 */
export interface Progress {
  /** A counter for `label`; the last call (done === total) always prints. */
  counter(label: string): (done: number, total: number) => void;
  /** Runs `work`, saying that `label` is still going every ~10 s. */
  during<T>(label: string, work: () => Promise<T>): Promise<T>;
  line(text: string): void;
}

const LOG_EVERY_MS = 10_000;
const TTY_EVERY_MS = 250;

export function createProgress(prefix: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  const tty = stream.isTTY === true;
  let last = 0;
  const write = (text: string, final: boolean) => stream.write(`${tty ? '\r\x1b[2K' : ''}${prefix}${text}${final || !tty ? '\n' : ''}`);

  return {
    counter(label) {
      return (done, total) => {
        const now = performance.now();
        if (done !== total && now - last < (tty ? TTY_EVERY_MS : LOG_EVERY_MS)) return;
        last = now;
        write(`${label}: ${done}/${total}`, done === total);
      };
    },
    async during(label, work) {
      const started = performance.now();
      const timer = setInterval(() => {
        last = performance.now();
        write(`${label}… ${((last - started) / 1000).toFixed(0)} s`, false);
      }, tty ? 1_000 : LOG_EVERY_MS);
      timer.unref();
      try {
        return await work();
      } finally {
        clearInterval(timer);
        if (tty) stream.write('\r\x1b[2K');
      }
    },
    line(text) {
      last = performance.now();
      write(text, true);
    },
  };
}
