import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, constants, stat } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Readable, Writable } from 'node:stream';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { endProcessTree, PROCESS_TREE_MARKER_ENV, readStartTime, type ProcessTreeRoot } from './process-tree.js';
import type { Sandbox, SandboxGrant } from './sandbox.js';
import { DEFAULT_CHILD_LANG, DEFAULT_CHILD_PATH } from './child-env.js';

/**
 * The `subprocess` primitive: runs one executable with an argv array (never a shell), an
 * explicit cwd and a complete environment, with a time limit, an output cap and cancellation.
 * Whatever way the run ends, the whole process tree it started is ended before this returns,
 * including descendants that left the process group (see process-tree.ts).
 */

export interface SubprocessRequest {
  /** argv[0] is the executable (looked up on the child's PATH unless it contains a '/'). */
  argv: string[];
  /** Working directory; must exist. */
  cwd: string;
  /**
   * The complete child environment (apply an allowlist with buildChildEnv first). One variable
   * is added: PROCESS_TREE_MARKER_ENV, a random id used to find escaped descendants.
   */
  env: Record<string, string>;
  /** Written to stdin, then stdin is ended; when absent stdin is ended at once. */
  stdin?: string;
  timeoutMs: number;
  /** Cap per stream (stdout, stderr), in bytes. */
  maxOutputBytes: number;
  /** Delay between SIGTERM and SIGKILL when the tree is ended; default 2000. */
  killGraceMs?: number;
  signal?: AbortSignal;
  /** When set, the command runs inside this sandbox with this grant (see sandbox.ts). */
  sandbox?: { sandbox: Sandbox; grant: SandboxGrant };
}

export interface SubprocessResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** Pids of leftover descendants that could not be ended (practically only processes stuck in the kernel). */
  survivors?: number[];
}

type StreamName = 'stdout' | 'stderr';
type StopReason = { kind: 'timeout' } | { kind: 'cancelled' } | { kind: 'overflow'; stream: StreamName };
type Child = ChildProcessByStdio<Writable, Readable, Readable>;

const DEFAULT_KILL_GRACE_MS = 2000;
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Builds a child environment from `source` keeping only allowlisted names, then `extra` on top.
 * Allowlist entries are exact names or prefixes ending in '*' (`AWS_*`; a lone '*' passes all).
 * Defaults, because almost every tool breaks without them and none of them is a secret:
 * PATH is always taken from `source` (else DEFAULT_CHILD_PATH), HOME is taken from `source`
 * when set, LANG from `source` else DEFAULT_CHILD_LANG. `extra` overrides everything.
 */
export function buildChildEnv(source: NodeJS.ProcessEnv, allowlist: string[], extra: Record<string, string>): Record<string, string> {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const [index, entry] of allowlist.entries()) {
    const star = typeof entry === 'string' ? entry.indexOf('*') : -2;
    if (star === -2 || entry === '' || (star !== -1 && star !== entry.length - 1)) {
      throw new KiwiError('INVALID_INPUT', `env allowlist entry ${index} (${JSON.stringify(entry)}) is invalid; use an exact variable name or a prefix ending in '*', such as "AWS_*"`);
    }
    if (entry.endsWith('*')) prefixes.push(entry.slice(0, -1));
    else exact.add(entry);
  }
  const env: Record<string, string> = { PATH: source.PATH ?? DEFAULT_CHILD_PATH, LANG: source.LANG ?? DEFAULT_CHILD_LANG };
  if (source.HOME !== undefined) env.HOME = source.HOME;
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (exact.has(name) || prefixes.some((prefix) => name.startsWith(prefix))) env[name] = value;
  }
  for (const [name, value] of Object.entries(extra)) env[name] = value;
  validateEnv(env, 'environment');
  return env;
}

function invalid(message: string): KiwiError {
  return new KiwiError('INVALID_INPUT', message);
}

function validateEnv(env: unknown, what: string): asserts env is Record<string, string> {
  if (typeof env !== 'object' || env === null || Array.isArray(env)) throw invalid(`${what} must be an object of string values`);
  for (const [name, value] of Object.entries(env)) {
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw invalid(`${what} variable name ${JSON.stringify(name)} is invalid; names must be non-empty and contain neither '=' nor NUL`);
    }
    if (typeof value !== 'string') throw invalid(`${what} variable ${name} must be a string, got ${typeof value}; convert it before passing it`);
    if (value.includes('\0')) throw invalid(`${what} variable ${name} contains a NUL byte, which cannot be passed to a process; remove it`);
  }
}

function validateRequest(req: SubprocessRequest): void {
  if (!Array.isArray(req.argv) || req.argv.length === 0) throw invalid('argv must be a non-empty array whose first element is the executable');
  req.argv.forEach((arg: unknown, index) => {
    if (typeof arg !== 'string') throw invalid(`argv[${index}] must be a string, got ${typeof arg}`);
    if (arg.includes('\0')) throw invalid(`argv[${index}] contains a NUL byte, which cannot be passed to a process; remove it`);
  });
  if (req.argv[0] === '') throw invalid('argv[0] (the executable) is empty; name the program to run');
  if (typeof req.cwd !== 'string' || req.cwd === '' || req.cwd.includes('\0')) throw invalid('cwd must be a non-empty path without NUL bytes');
  validateEnv(req.env, 'env');
  if (req.stdin !== undefined && typeof req.stdin !== 'string') throw invalid('stdin must be a string when given');
  const positive = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value) && value > 0;
  if (!positive(req.timeoutMs)) throw invalid(`timeoutMs must be a positive number of milliseconds, got ${String(req.timeoutMs)}`);
  if (!positive(req.maxOutputBytes) || !Number.isInteger(req.maxOutputBytes)) {
    throw invalid(`maxOutputBytes must be a positive integer, got ${String(req.maxOutputBytes)}`);
  }
  const grace = req.killGraceMs;
  if (grace !== undefined && !(typeof grace === 'number' && Number.isFinite(grace) && grace >= 0)) {
    throw invalid(`killGraceMs must be a number of milliseconds >= 0, got ${String(grace)}`);
  }
}

async function assertDirectory(cwd: string): Promise<void> {
  const info = await stat(cwd).catch(() => undefined);
  if (info === undefined) throw invalid(`working directory ${cwd} does not exist; create it or fix \`cwd\` in the tool config`);
  if (!info.isDirectory()) throw invalid(`working directory ${cwd} is not a directory; point \`cwd\` at a directory`);
}

/**
 * True when `exe` is surely not there: a path (from `cwd`) to nothing, or a name in none of the
 * PATH folders. False when it may run, and when a relative PATH entry makes it impossible to tell.
 */
async function missingExecutable(exe: string, cwd: string, searchPath: string | undefined): Promise<boolean> {
  const exists = (file: string): Promise<boolean> => access(file, constants.F_OK).then(() => true, () => false);
  if (exe.includes('/')) return !(await exists(path.resolve(cwd, exe)));
  const dirs = (searchPath ?? DEFAULT_CHILD_PATH).split(':');
  if (dirs.some((dir) => !path.isAbsolute(dir))) return false;
  for (const dir of dirs) if (await exists(path.join(dir, exe))) return false;
  return true;
}

function spawnFailed(exe: string, error: unknown, env: Record<string, string>): KiwiError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const hint =
    code === 'ENOENT'
      ? exe.includes('/')
        ? `executable ${exe} was not found; check the path in the tool's config`
        : `executable ${exe} was not found on PATH (${env.PATH ?? 'unset'}); check that it is installed and on PATH, or give its absolute path in the tool's config`
      : code === 'EACCES'
        ? `executable ${exe} could not be run (permission denied); check that it is an executable file, and the tool's config`
        : `executable ${exe} could not be started (${code ?? String(error)}); check PATH and the tool's config`;
  return new KiwiError('SPAWN_FAILED', hint, { cause: error, details: { executable: exe, code } });
}

/** Collects one stream up to the cap; past it, keeps draining (so writers are not blocked) but drops bytes. */
function collect(stream: Readable, cap: number, onOverflow: () => void) {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let overflowed = false;
  stream.on('data', (chunk: Buffer) => {
    if (overflowed) return;
    if (bytes + chunk.length > cap) {
      chunks.push(chunk.subarray(0, cap - bytes));
      bytes = cap;
      overflowed = true;
      onOverflow();
      return;
    }
    chunks.push(chunk);
    bytes += chunk.length;
  });
  stream.on('error', () => undefined); // a destroyed pipe is expected when the tree is ended
  return { text: () => Buffer.concat(chunks).toString('utf8') };
}

async function start(exe: string, argv: string[], req: SubprocessRequest, marker: string): Promise<Child> {
  let child: Child;
  try {
    child = spawn(argv[0] as string, argv.slice(1), {
      cwd: req.cwd,
      env: { ...req.env, [PROCESS_TREE_MARKER_ENV]: marker },
      shell: false,
      detached: true, // own session and process group, so the whole tree can be signalled
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
  } catch (error) {
    throw spawnFailed(exe, error, req.env);
  }
  if (child.pid === undefined) {
    // libuv reports a failed exec (ENOENT, EACCES) asynchronously through 'error'.
    const error = await new Promise<unknown>((resolve) => child.once('error', resolve));
    throw spawnFailed(exe, error, req.env);
  }
  return child;
}

function stopError(reason: StopReason, exe: string, req: SubprocessRequest, details: Record<string, unknown>): KiwiError {
  switch (reason.kind) {
    case 'timeout':
      return new KiwiError('TOOL_TIMEOUT', `${exe} did not finish within ${req.timeoutMs} ms and was ended; raise \`timeout_ms\` in the tool config if it needs longer`, { details });
    case 'cancelled':
      return new KiwiError('TOOL_CANCELLED', `${exe} was cancelled while running and its process tree was ended`, { details, cause: req.signal?.reason });
    case 'overflow':
      return new KiwiError(
        'OUTPUT_TOO_LARGE',
        `${exe} wrote more than ${req.maxOutputBytes} bytes to ${reason.stream} and was ended; make the tool print less or raise \`max_output_bytes\` in the tool config`,
        { details: { ...details, stream: reason.stream, maxOutputBytes: req.maxOutputBytes } },
      );
  }
}

/** Runs one subprocess to completion. A non-zero exit is a result; limits and cancellation throw. */
export async function runSubprocess(req: SubprocessRequest): Promise<SubprocessResult> {
  validateRequest(req);
  const exe = req.argv[0] as string;
  throwIfAborted(req.signal, exe);
  await assertDirectory(req.cwd);
  throwIfAborted(req.signal, exe);

  // Inside the sandbox a missing program would be a result (exit 127, "prlimit: failed to execute"):
  // the same clear error as without one instead.
  if (req.sandbox && (await missingExecutable(exe, req.cwd, req.env['PATH']))) throw spawnFailed(exe, Object.assign(new Error(`${exe}: not found`), { code: 'ENOENT' }), req.env);
  const argv = req.sandbox ? req.sandbox.sandbox.wrap(req.argv, req.cwd, req.sandbox.grant, req.timeoutMs, req.env) : req.argv;

  const startedAt = performance.now();
  const marker = randomUUID();
  const child = await start(exe, argv, req, marker);
  const pid = child.pid as number;
  let exit: { code: number | null; signal: string | null } | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve();
    }),
  );
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const root: ProcessTreeRoot = { pid, startTime: readStartTime(pid), marker, exited };

  let stopReason: StopReason | undefined;
  let onStop: (reason: StopReason) => void = () => undefined;
  const stopped = new Promise<StopReason>((resolve) => (onStop = resolve));
  const stop = (reason: StopReason): void => {
    if (stopReason !== undefined) return;
    stopReason = reason;
    onStop(reason);
  };

  const stdout = collect(child.stdout, req.maxOutputBytes, () => stop({ kind: 'overflow', stream: 'stdout' }));
  const stderr = collect(child.stderr, req.maxOutputBytes, () => stop({ kind: 'overflow', stream: 'stderr' }));
  child.stdin.on('error', () => undefined); // EPIPE when the child does not read its input
  child.stdin.end(req.stdin ?? '');

  const timer = setTimeout(() => stop({ kind: 'timeout' }), Math.min(req.timeoutMs, MAX_TIMER_MS));
  const onAbort = (): void => stop({ kind: 'cancelled' });
  req.signal?.addEventListener('abort', onAbort, { once: true });
  if (req.signal?.aborted) onAbort(); // fired while the child was being started
  const graceMs = req.killGraceMs ?? DEFAULT_KILL_GRACE_MS;

  try {
    let survivors: number[] = [];
    await Promise.race([exited, stopped]);
    if (stopReason === undefined) {
      // The direct child is done; background processes it left behind are ended too, which
      // also releases pipes they inherited so 'close' can come.
      survivors = (await endProcessTree(root, { graceMs })).survivors;
      await Promise.race([closed, stopped]);
    }
    if (stopReason !== undefined) {
      child.stdin.destroy();
      survivors = (await endProcessTree(root, { graceMs })).survivors;
      child.stdout.destroy();
      child.stderr.destroy();
      const details = {
        stdout: stdout.text(),
        stderr: stderr.text(),
        exitCode: exit?.code ?? null,
        exitSignal: exit?.signal ?? null,
        durationMs: Math.round(performance.now() - startedAt),
        survivors,
      };
      throw stopError(stopReason, exe, req, details);
    }
    await exited;
    const result: SubprocessResult = {
      exitCode: exit?.code ?? null,
      signal: exit?.signal ?? null,
      stdout: stdout.text(),
      stderr: stderr.text(),
      durationMs: Math.round(performance.now() - startedAt),
    };
    if (survivors.length > 0) result.survivors = survivors;
    return result;
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onAbort);
  }
}
