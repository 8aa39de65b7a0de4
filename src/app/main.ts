#!/usr/bin/env node
// LanceDB's native logger reads this when it loads; its WARN lines ("No existing dataset…") are
// noise for people running the CLI. Set before the dynamic import below loads it.
process.env['LANCEDB_LOG'] ??= 'error';

const { runCli } = await import('./run-cli.js');

const controller = new AbortController();
// Ctrl-C cancels the running tool (its process tree is ended) instead of orphaning it.
process.once('SIGINT', () => controller.abort());
process.once('SIGTERM', () => controller.abort());

// `kiwi … | head` closes stdout early; stop writing to it rather than crash on EPIPE.
let stdoutOpen = true;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  stdoutOpen = false;
});

// A status line (a counter on a terminal) is cleared before the next line of stderr, not run into it.
const CLEAR_LINE = '\r\x1b[2K';
let statusShown = false;
const status = (text: string): void => {
  process.stderr.write(`${CLEAR_LINE}${text}`);
  statusShown = text !== '';
};

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  io: {
    out: (line) => void (stdoutOpen && process.stdout.write(`${line}\n`)),
    err: (line) => {
      process.stderr.write(`${statusShown ? CLEAR_LINE : ''}${line}\n`);
      statusShown = false;
    },
    write: (text) => void (stdoutOpen && process.stdout.write(text)),
    ...(process.stderr.isTTY ? { status } : {}),
  },
  signal: controller.signal,
});
