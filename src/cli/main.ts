#!/usr/bin/env node
import { runCli } from './run-cli.js';

const controller = new AbortController();
// Ctrl-C cancels the running tool (its process tree is ended) instead of orphaning it.
process.once('SIGINT', () => controller.abort());
process.once('SIGTERM', () => controller.abort());

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  io: { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) },
  signal: controller.signal,
});
