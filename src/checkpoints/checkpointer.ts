import { describeError, isKiwiError, KiwiError } from '../base/errors.js';
import type { CheckpointSettings } from './checkpoint-config.js';
import { checkpointClient, resolveCheckpoint, takeCheckpoint, type CheckpointMeta, type CheckpointOutcome } from './checkpoint-store.js';
import { findWorkTree, type WorkTree, type WorkTreeLookup } from './git-work-tree.js';
import { restoreCheckpoint, type RestoreOutcome } from './restore-checkpoint.js';

/**
 * What the tool proxy calls before a state-changing call runs. It never fails the call: when no
 * checkpoint can be taken (no git, a file over the limit, too slow) the call runs without one and
 * the reason is warned about (each distinct reason once, so a big file does not repeat on every call).
 */
export interface Checkpointer {
  /**
   * The id of the checkpoint that holds the work tree as it is before this call (a new one, or the
   * newest one when nothing changed since), or undefined when there is none.
   */
  before(meta: CheckpointMeta, signal?: AbortSignal): Promise<string | undefined>;
  /**
   * Restores checkpoint `id` for `meta.client` (MCP `execute action=rollback`): one taken before
   * another client's call, or by a person, is not found for it, as one that does not exist.
   */
  restore(id: string, meta: CheckpointMeta & { client: string }, signal?: AbortSignal): Promise<RestoreOutcome>;
  /** For the banner: whether checkpoints are taken here, and where, or why not. */
  status(): Promise<{ on: true; top: string; ref: string } | { on: false; reason: string }>;
}

export interface CheckpointerOptions {
  /** The project folder (a real path). */
  root: string;
  env: Readonly<Record<string, string | undefined>>;
  settings: CheckpointSettings;
  /** Default: `process.emitWarning` with code KIWI_CHECKPOINT. */
  onWarning?: (message: string) => void;
}

/** Distinct warnings remembered, so one that keeps coming is said once. */
const MAX_REMEMBERED = 100;

export function createCheckpointer(options: CheckpointerOptions): Checkpointer {
  const { settings } = options;
  const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, { code: 'KIWI_CHECKPOINT' }));
  const said = new Set<string>();
  const warnOnce = (message: string): void => {
    if (said.has(message)) return;
    if (said.size < MAX_REMEMBERED) said.add(message);
    try {
      warn(message);
    } catch {
      // A broken listener must not fail a tool call.
    }
  };
  // Looked up once per process: a project that becomes a git repository later is seen on the next start.
  let lookup: Promise<WorkTreeLookup> | undefined;
  const workTree = (): Promise<WorkTreeLookup> =>
    (lookup ??= findWorkTree(options.root, { env: options.env, timeoutMs: settings.timeoutMs }).then((found) => {
      // Not being in git is normal and the banner says so; git that is missing or refuses the folder is worth a word.
      if (!found.found && !/is not in a git work tree/.test(found.reason)) warnOnce(`checkpoints are off: ${found.reason}`);
      return found;
    }));
  // One checkpoint at a time in this process: concurrent calls would snapshot the same work tree anyway.
  let queue: Promise<unknown> = Promise.resolve();

  async function take(wt: WorkTree, meta: CheckpointMeta, signal?: AbortSignal): Promise<CheckpointOutcome> {
    const git = signal ? withSignal(wt, signal) : wt;
    return takeCheckpoint(git, meta, settings);
  }

  return {
    async before(meta, signal) {
      if (!settings.enabled) return undefined;
      const found = await workTree();
      if (!found.found) return undefined;
      const run = queue.then(() => take(found.tree, meta, signal));
      queue = run.catch(() => undefined);
      try {
        const outcome = await run;
        if (outcome.status === 'skipped') {
          warnOnce(`no checkpoint before ${meta.tool} in ${found.tree.top}: ${outcome.reason}`);
          return undefined;
        }
        return outcome.id;
      } catch (error) {
        // Cancelled: the call is being cancelled too, and will say so itself.
        if (!isKiwiError(error, 'TOOL_CANCELLED')) warnOnce(`no checkpoint before ${meta.tool}: ${describeError(error).split('\n')[0]}`);
        return undefined;
      }
    },
    async restore(id, meta, signal) {
      const found = await workTree();
      if (!found.found) throw new KiwiError('NOT_FOUND', `no checkpoint ${id.slice(0, 80)}: ${found.reason}, so there are no checkpoints`);
      const wt = signal ? withSignal(found.tree, signal) : found.tree;
      const target = await resolveCheckpoint(wt, id);
      if ((await checkpointClient(wt, target)) !== meta.client) throw new KiwiError('NOT_FOUND', `no checkpoint ${id} of client ${meta.client} in ${wt.top}`);
      const run = queue.then(() => restoreCheckpoint(wt, target, settings, { dryRun: false, before: { ...meta, tool: `rollback to ${target.slice(0, 12)}` } }));
      queue = run.catch(() => undefined);
      return run;
    },
    async status() {
      if (!settings.enabled) return { on: false, reason: 'checkpoints.enabled is false in .ai/config/gateway.yaml' };
      const found = await workTree();
      return found.found ? { on: true, top: found.tree.top, ref: found.tree.ref } : { on: false, reason: found.reason };
    },
  };
}

/** The same work tree, with every git command cancelled by `signal`. */
function withSignal(wt: WorkTree, signal: AbortSignal): WorkTree {
  return { ...wt, git: (args, run) => wt.git(args, { ...run, signal }) };
}
