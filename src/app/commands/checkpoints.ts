import { randomUUID } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { readCheckpointSettings, type CheckpointSettings } from '../../checkpoints/checkpoint-config.js';
import { listCheckpoints, resolveCheckpoint, type CheckpointInfo } from '../../checkpoints/checkpoint-store.js';
import { findWorkTree, type WorkTree } from '../../checkpoints/git-work-tree.js';
import { currentTree, restoreCheckpoint, type RestorePlan } from '../../checkpoints/restore-checkpoint.js';
import { KiwiError } from '../../base/errors.js';
import { newSessionId } from '../../project/open-project.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { CHECKPOINTS_HELP } from './checkpoints-help.js';
import { projectOptions } from '../../cli/project-options.js';

const USAGE = CHECKPOINTS_HELP.usage;
/** A person is waiting, so the CLI gives a snapshot longer than a tool call gets. */
const CLI_MIN_TIMEOUT_MS = 60_000;
const MAX_DIFF_BYTES = 16 * 1024 * 1024;

/**
 * `kiwi checkpoints`: the git checkpoints taken before state-changing tool calls.
 * `diff ID` compares the checkpoint with the work tree as it is now (what `restore ID` would
 * undo); `--parent` shows what changed between the previous checkpoint and this one instead.
 * `restore ID` first checkpoints the work tree as it is, so it can itself be undone, then writes
 * the checkpoint's files back and removes files created since (never ignored ones).
 */
export async function checkpointsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, CHECKPOINTS_HELP);
  const [action, id, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected ${extra.map((e) => JSON.stringify(e)).join(' ')}; usage: ${USAGE}`);
  if (action !== 'list' && action !== 'diff' && action !== 'restore') {
    throw new UsageError(action === undefined ? `say what to do; usage: ${USAGE}` : `unknown action \`${action}\`; usage: ${USAGE}`);
  }
  if (action === 'list' && id !== undefined) throw new UsageError(`\`kiwi checkpoints list\` takes no id; usage: ${USAGE}`);
  if (action !== 'list' && id === undefined) throw new UsageError(`give the checkpoint id that \`kiwi checkpoints list\` shows; usage: ${USAGE}`);
  const limit = Number(values.n);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new UsageError(`-n must be a whole number from 1 to 10000, got ${values.n}`);

  // Checkpoints are git's: a work tree without .ai/ has none, and says so itself.
  const root = await realpath(projectOptions(ctx, values, { needsAi: false }).projectDir);
  const settings = await readCheckpointSettings(path.join(root, '.ai', 'config', 'gateway.yaml'), root);
  const limits = { ...settings, timeoutMs: Math.max(settings.timeoutMs, CLI_MIN_TIMEOUT_MS) };
  const found = await findWorkTree(root, { env: ctx.env, timeoutMs: limits.timeoutMs, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  if (!found.found) throw new KiwiError('INVALID_INPUT', `${found.reason}: checkpoints are taken only in a git project (\`git init\` makes one)`);
  const wt = found.tree;

  if (action === 'list') return list(ctx, wt, settings, limit, values.json === true);
  const target = await resolveCheckpoint(wt, id as string);
  if (action === 'diff') return diff(ctx, wt, target, limits, { stat: values.stat === true, parent: values.parent === true });
  return restore(ctx, wt, target, limits, { dryRun: values['dry-run'] === true, json: values.json === true });
}

async function list(ctx: CliContext, wt: WorkTree, settings: CheckpointSettings, limit: number, json: boolean): Promise<number> {
  const items = await listCheckpoints(wt, limit);
  if (json) {
    ctx.io.out(JSON.stringify(items));
    return 0;
  }
  if (items.length === 0) {
    const off = settings.enabled ? '' : ' (and checkpoints.enabled is false in .ai/config/gateway.yaml)';
    ctx.io.err(`kiwi: no checkpoints in ${wt.top} yet${off}; one is taken before each call of a tool that may change state`);
    return 0;
  }
  for (const c of items) ctx.io.out(formatCheckpoint(c));
  return 0;
}

function formatCheckpoint(c: CheckpointInfo): string {
  const files = c.filesChanged === undefined ? 'first checkpoint' : `${c.filesChanged} file${c.filesChanged === 1 ? '' : 's'} changed since the one before`;
  return `${short(c.id)}  ${c.time}  ${c.tool}  call ${c.callId}  ${files}`;
}

async function diff(ctx: CliContext, wt: WorkTree, target: string, limits: CheckpointSettings, flags: { stat: boolean; parent: boolean }): Promise<number> {
  let from: string;
  let to: string;
  if (flags.parent) {
    const parent = (await wt.git(['rev-parse', '--verify', '--quiet', `${target}^1`], { okCodes: [1, 128] })).stdout.trim();
    if (parent === '') throw new KiwiError('INVALID_INPUT', `${short(target)} is the first checkpoint: it has no earlier one to compare with; leave out --parent to compare it with the work tree`);
    from = parent;
    to = target;
  } else {
    from = target;
    to = await currentTree(wt, limits);
  }
  const r = await wt.git(['diff', '--no-ext-diff', '--no-textconv', '--no-renames', flags.stat ? '--stat' : '--patch', from, to, '--', ...wt.excludes], { maxOutputBytes: MAX_DIFF_BYTES }).catch((error: unknown) => {
    if (error instanceof KiwiError && error.code === 'OUTPUT_TOO_LARGE') throw new KiwiError('OUTPUT_TOO_LARGE', `the diff is over ${MAX_DIFF_BYTES / 1024 / 1024} MiB; add --stat for the files only`);
    throw error;
  });
  const text = r.stdout.replace(/\n$/, '');
  if (text === '') ctx.io.err(flags.parent ? `kiwi: no differences between ${short(target)} and the one before` : `kiwi: the work tree is the same as checkpoint ${short(target)}`);
  else ctx.io.out(text);
  return 0;
}

async function restore(ctx: CliContext, wt: WorkTree, target: string, limits: CheckpointSettings, flags: { dryRun: boolean; json: boolean }): Promise<number> {
  const before = { tool: `kiwi checkpoints restore ${short(target)}`, callId: randomUUID(), session: newSessionId('cli') };
  const { plan, undo } = await restoreCheckpoint(wt, target, limits, { dryRun: flags.dryRun, before });
  if (flags.json) {
    ctx.io.out(JSON.stringify({ checkpoint: target, dryRun: flags.dryRun, ...plan, ...(undo ? { undo } : {}) }));
    return 0;
  }
  describePlan(ctx, plan, flags.dryRun);
  if (plan.write.length + plan.remove.length === 0) ctx.io.err(`kiwi: the work tree already matches checkpoint ${short(target)}; nothing to restore`);
  else if (flags.dryRun) ctx.io.err(`kiwi: dry run: nothing was changed; \`kiwi checkpoints restore ${short(target)}\` does it`);
  else ctx.io.err(`kiwi: restored checkpoint ${short(target)}: ${plan.write.length} file(s) written back, ${plan.remove.length} removed; HEAD, branches and the index are unchanged. Undo: kiwi checkpoints restore ${short(undo as string)}`);
  return 0;
}

function describePlan(ctx: CliContext, plan: RestorePlan, dryRun: boolean): void {
  for (const f of plan.write) ctx.io.out(`${dryRun ? 'would restore' : 'restored'}  ${f}`);
  for (const f of plan.remove) ctx.io.out(`${dryRun ? 'would remove' : 'removed'}  ${f}`);
  for (const f of plan.leftAlone) ctx.io.out(`left alone (a nested repository or submodule)  ${f}`);
}

function short(id: string): string {
  return id.slice(0, 12);
}
