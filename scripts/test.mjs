#!/usr/bin/env node
// `npm test`: the type check and the tests at once. tsc (incremental, one thread) and the tests
// share the two cores while the tests wait on databases, servers and children, instead of the
// tests waiting for tsc first; at a lower priority, tsc takes the CPU the tests leave, not the
// other way round (it is done long before they are). A type error stops the run as soon as tsc
// reports it: its output is printed, the run is cancelled (the global setup's teardown still
// runs) and the exit is 1.
// Arguments go to vitest as `vitest run` takes them: `npm test -- test/http --project unit`.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { createVitest, parseCLI } from 'vitest/node';

const { filter, options } = parseCLI(['vitest', 'run', ...process.argv.slice(2)]);

// npm sets npm_execpath to its own CLI when it runs this script; plain `node scripts/test.mjs` finds npm on the PATH.
const npm = process.env['npm_execpath'];
const tsc = spawn(npm ? process.execPath : 'npm', [...(npm ? [npm] : []), 'run', '--silent', 'typecheck'], { stdio: ['ignore', 'pipe', 'pipe'] });
// Set before npm starts tsc, which inherits it. Where it cannot be set, tsc runs as before.
try {
  if (tsc.pid !== undefined) setPriority(tsc.pid, 10);
} catch {}
let typeErrors = '';
tsc.stdout.on('data', (chunk) => (typeErrors += chunk));
tsc.stderr.on('data', (chunk) => (typeErrors += chunk));

let vitest;
let typesFailed = false;
const typesChecked = new Promise((resolve) => {
  tsc.on('error', (error) => resolve(`npm test: could not run the type check: ${error.message}`));
  tsc.on('close', (code) => resolve(code === 0 ? undefined : typeErrors));
}).then((failure) => {
  if (failure === undefined) return;
  typesFailed = true;
  process.stderr.write(`\n${failure.trimEnd()}\n\nnpm test: the type check failed (above); the tests are stopped.\n`);
  // Until the run has started (after the global setup), vitest forgets a cancel when it starts.
  const cancel = () => void vitest?.cancelCurrentRun('keyboard-input');
  cancel();
  setInterval(cancel, 250).unref();
});

// What `vitest run` does (startVitest), with the instance in hand before the run starts.
process.env['TEST'] = 'true';
process.env['VITEST'] = 'true';
process.env['NODE_ENV'] ??= 'test';
vitest = await createVitest('test', { ...options, watch: false });
try {
  await vitest.start(filter);
} catch (error) {
  process.exitCode = 1;
  vitest.logger.printError(error, { fullStack: true, type: 'Unhandled Error' });
}
await typesChecked;
if (typesFailed) process.exitCode = 1;
await vitest.exit();
// Everything is closed and reported. LanceDB's native runtime, loaded here by the global setup's
// demo index, would hold the exit for another ~5 s while its idle threads time out.
process.exit();
