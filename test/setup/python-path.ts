import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { findBinary } from '../helpers/find-binary.js';

/**
 * The PATH for the test run, with the interpreter a pyenv shim stands for put before the shims.
 *
 * A pyenv shim is a bash script that runs `pyenv exec`, which runs a few more bash scripts to
 * find the version: about 0.6 s of CPU for every `python3` the tests start (the demo's
 * word_count, the sandbox's checks), where the interpreter itself starts in 0.03 s. Asked once
 * here, the shim's answer is the same interpreter each of those would have reached. Without
 * pyenv, or when the shim cannot answer, PATH is returned as it is.
 */
export function pathPastPythonShim(pathVariable: string): string {
  const python = findBinary('python3', []);
  if (python === undefined || !isPyenvShim(python)) return pathVariable;
  try {
    const executable = execFileSync(python, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8', timeout: 30_000 }).trim();
    return path.isAbsolute(executable) ? [path.dirname(executable), pathVariable].join(path.delimiter) : pathVariable;
  } catch {
    return pathVariable;
  }
}

function isPyenvShim(file: string): boolean {
  try {
    return readFileSync(file, 'utf8').slice(0, 2000).includes('pyenv" exec');
  } catch {
    return false;
  }
}
