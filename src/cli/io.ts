/** Where a command writes; the CLI entry passes process streams, tests pass arrays. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** Text without a line end, for output that streams (`kiwi chat`); absent: whole lines only. */
  write?(text: string): void;
  /**
   * One line of stderr rewritten in place (a counter); `''` clears it, and so does the next `err`.
   * Present only where stderr is a terminal: elsewhere progress is whole lines, now and then.
   */
  status?(text: string): void;
}

/** What every command gets: its arguments, the caller's environment and working folder. */
export interface CliContext {
  argv: string[];
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  io: CliIo;
  signal?: AbortSignal;
}

/** A usage mistake: printed as one line with a hint, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
