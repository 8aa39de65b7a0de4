import { KiwiError } from '../base/errors.js';
import { buildChildEnv, runSubprocess } from '../primitives/subprocess.js';

/**
 * The real `git` binary through the subprocess primitive: argv arrays, a time limit and an output
 * cap on every command. Checkpoints never read the caller's GIT_* variables (a GIT_DIR or
 * GIT_INDEX_FILE left in the environment would point them at the user's own index); each command
 * gets a fresh environment with only what git needs to find its config.
 */

export interface GitOptions {
  /** Where git runs (the work tree's top folder, or the folder being probed). */
  cwd: string;
  /** The gateway's environment: PATH, HOME and XDG_CONFIG_HOME are taken from it, nothing else. */
  env: Readonly<Record<string, string | undefined>>;
  timeoutMs: number;
  /** Cap on stdout (and stderr) of one command. Default 4 MiB. */
  maxOutputBytes?: number;
  signal?: AbortSignal;
}

export interface GitRun {
  /** Variables added for this command, e.g. GIT_INDEX_FILE for the checkpoint's own index. */
  extraEnv?: Record<string, string>;
  stdin?: string;
  /** Exit codes that are answers, not failures (e.g. 1 from `git rev-parse --verify -q`). */
  okCodes?: number[];
  maxOutputBytes?: number;
  timeoutMs?: number;
  /** Overrides the options' signal for this command. */
  signal?: AbortSignal;
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export type Git = (args: string[], run?: GitRun) => Promise<GitResult>;

const DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024;

/**
 * Config every checkpoint command runs with: no fsmonitor daemon (the primitive ends every process
 * a command leaves behind), no pager, no colours, no advice on stderr.
 */
const FIXED_CONFIG = ['-c', 'core.fsmonitor=false', '-c', 'core.pager=cat', '-c', 'color.ui=false', '-c', 'advice.addEmbeddedRepo=false'];

export function createGit(options: GitOptions): Git {
  const base = buildChildEnv(pickDefined(options.env), ['XDG_CONFIG_HOME'], {
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    // Commands that only read (diff, ls-files) must not refresh and rewrite the user's index.
    GIT_OPTIONAL_LOCKS: '0',
  });
  return async (args, run = {}) => {
    const result = await runSubprocess({
      argv: ['git', ...FIXED_CONFIG, ...args],
      cwd: options.cwd,
      env: { ...base, ...run.extraEnv },
      timeoutMs: run.timeoutMs ?? options.timeoutMs,
      maxOutputBytes: run.maxOutputBytes ?? options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT,
      killGraceMs: 500,
      ...(run.stdin === undefined ? {} : { stdin: run.stdin }),
      ...((run.signal ?? options.signal) ? { signal: run.signal ?? options.signal } : {}),
    });
    const code = result.exitCode ?? -1;
    if (code !== 0 && !(run.okCodes ?? []).includes(code)) {
      const said = result.stderr.trim().split('\n').slice(-3).join(' / ') || `exit ${code}`;
      throw new KiwiError('TOOL_FAILED', `git ${args[0] ?? ''} failed in ${options.cwd}: ${said}`, { details: { args, code, stderr: result.stderr.slice(0, 4000) } });
    }
    return { code, stdout: result.stdout, stderr: result.stderr };
  };
}

function pickDefined(env: GitOptions['env']): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'XDG_CONFIG_HOME']) if (env[name] !== undefined) out[name] = env[name];
  return out;
}
