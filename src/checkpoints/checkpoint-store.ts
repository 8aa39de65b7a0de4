import { KiwiError } from '../base/errors.js';
import type { WorkTree } from './git-work-tree.js';
import { snapshotTree, type SnapshotLimits } from './snapshot-tree.js';

/**
 * Checkpoints are commits on the work tree's checkpoint ref, each the parent of the next, so the
 * ref's log is the list. A commit's message names the tool, call, session and time as trailers.
 */

export interface CheckpointMeta {
  tool: string;
  callId: string;
  session: string;
  /** The client whose call it was taken before: only that client may restore it over MCP. */
  client?: string;
  time?: Date;
}

export type CheckpointOutcome =
  /** A new checkpoint holds the work tree as it is now. */
  | { status: 'created'; id: string; tree: string }
  /** The newest checkpoint already holds the work tree as it is now: `id` is that one. */
  | { status: 'unchanged'; id: string; tree: string }
  | { status: 'skipped'; reason: string };

export interface CheckpointInfo {
  id: string;
  /** The previous checkpoint; absent for the first. */
  parent?: string;
  time: string;
  tool: string;
  callId: string;
  session: string;
  client?: string;
  /** Files that differ from the previous checkpoint; absent for the first. */
  filesChanged?: number;
}

const AUTHOR = { name: 'Kiwi Gateway', email: 'kiwi-gateway@localhost' };
/** Another process moving the ref between our read and our update is retried this often. */
const MAX_RACES = 3;

/** The newest checkpoint of the work tree, if there is one. */
export async function readTip(wt: WorkTree): Promise<{ id: string; tree: string } | undefined> {
  const out = (await wt.git(['for-each-ref', '--format=%(objectname) %(tree)', wt.ref])).stdout;
  const line = out.split('\n').find((l) => l.length > 0);
  if (line === undefined) return undefined;
  const [id, tree] = line.split(' ');
  return id && tree ? { id, tree } : undefined;
}

/**
 * Commits the work tree onto the checkpoint ref, unless it is the same as the newest checkpoint
 * (and that one was taken for the same client).
 * Limits and git failures come back as `skipped` with a reason; only cancellation throws.
 */
export async function takeCheckpoint(wt: WorkTree, meta: CheckpointMeta, limits: SnapshotLimits): Promise<CheckpointOutcome> {
  const deadline = Date.now() + limits.timeoutMs;
  // The tip is read while the snapshot is made; the compare-and-swap below catches a tip that moved meanwhile.
  const [snap, firstTip] = await Promise.all([snapshotTree(wt, limits, deadline), readTip(wt).catch(() => null)]);
  if (!snap.ok) return { status: 'skipped', reason: snap.reason };
  const time = meta.time ?? new Date();
  const left = (): number => Math.max(1, deadline - Date.now());
  try {
    for (let attempt = 0; attempt < MAX_RACES; attempt += 1) {
      const tip = attempt === 0 && firstTip !== null ? firstTip : await readTip(wt);
      // The same tree checkpointed for another client is not this client's to restore: it gets its own.
      if (tip?.tree === snap.tree && (meta.client === undefined || (await checkpointClient(wt, tip.id)) === meta.client)) return { status: 'unchanged', id: tip.id, tree: snap.tree };
      const seconds = Math.floor(time.getTime() / 1000);
      const identity = {
        GIT_AUTHOR_NAME: AUTHOR.name,
        GIT_AUTHOR_EMAIL: AUTHOR.email,
        GIT_AUTHOR_DATE: `@${seconds} +0000`,
        GIT_COMMITTER_NAME: AUTHOR.name,
        GIT_COMMITTER_EMAIL: AUTHOR.email,
        GIT_COMMITTER_DATE: `@${seconds} +0000`,
      };
      const parent = tip ? ['-p', tip.id] : [];
      const commit = await wt.git(['commit-tree', '--no-gpg-sign', snap.tree, ...parent, '-F', '-'], { stdin: message(meta, time), extraEnv: identity, timeoutMs: left() });
      const id = commit.stdout.trim();
      // Compare-and-swap: the update fails if another process moved the ref since `tip` was read.
      const expected = tip?.id ?? '0'.repeat(id.length);
      const updated = await wt.git(['update-ref', '-m', `kiwi checkpoint before ${oneLine(meta.tool)}`, wt.ref, id, expected], { okCodes: [1, 128], timeoutMs: left() });
      if (updated.code === 0) return { status: 'created', id, tree: snap.tree };
      const now = await readTip(wt);
      if (now?.id === tip?.id) throw new KiwiError('TOOL_FAILED', `git update-ref ${wt.ref} failed: ${updated.stderr.trim().split('\n')[0] ?? ''}`);
    }
    return { status: 'skipped', reason: `${wt.ref} kept moving under other processes' checkpoints` };
  } catch (error) {
    if (error instanceof KiwiError && error.code === 'TOOL_CANCELLED') throw error;
    if (error instanceof KiwiError && error.code === 'TOOL_TIMEOUT') return { status: 'skipped', reason: `it took over ${limits.timeoutMs} ms (checkpoints.timeout_ms)` };
    return { status: 'skipped', reason: error instanceof Error ? (error.message.split('\n')[0] ?? 'git failed') : String(error) };
  }
}

/** Newest first. `limit` caps how many are read. */
export async function listCheckpoints(wt: WorkTree, limit: number): Promise<CheckpointInfo[]> {
  if ((await readTip(wt)) === undefined) return [];
  const out = (await wt.git(['log', `--max-count=${limit}`, '--no-renames', '--shortstat', '--format=%x1e%H%x1f%P%x1f%ct%x1f%B%x1f', wt.ref, '--'], { maxOutputBytes: 16 * 1024 * 1024 })).stdout;
  const list: CheckpointInfo[] = [];
  for (const chunk of out.split('\x1e')) {
    if (chunk.trim() === '') continue;
    const [id = '', parent = '', ct = '0', body = '', stat = ''] = chunk.split('\x1f');
    const trailers = parseTrailers(body);
    const files = /(\d+) files? changed/.exec(stat);
    list.push({
      id,
      ...(parent ? { parent: parent.split(' ')[0] as string } : {}),
      time: trailers.get('Kiwi-Time') ?? new Date(Number(ct) * 1000).toISOString(),
      tool: trailers.get('Kiwi-Tool') ?? '?',
      callId: trailers.get('Kiwi-Call') ?? '?',
      session: trailers.get('Kiwi-Session') ?? '?',
      ...(trailers.has('Kiwi-Client') ? { client: trailers.get('Kiwi-Client') as string } : {}),
      ...(parent ? { filesChanged: files ? Number(files[1]) : 0 } : {}),
    });
  }
  return list;
}

/**
 * The full id of the checkpoint `id` names (a hex prefix as `list` shows it). Anything that is not
 * on this work tree's checkpoint history is refused, so a branch name or a commit of the user's can
 * never be "restored".
 */
export async function resolveCheckpoint(wt: WorkTree, id: string): Promise<string> {
  if (!/^[0-9a-f]{4,64}$/i.test(id)) throw new KiwiError('INVALID_INPUT', `\`${id.slice(0, 80)}\` is not a checkpoint id: give the hex id (at least 4 characters) that \`kiwi checkpoints list\` shows`);
  if ((await readTip(wt)) === undefined) throw new KiwiError('NOT_FOUND', `there are no checkpoints in ${wt.top} yet`);
  const parsed = await wt.git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${id.toLowerCase()}^{commit}`], { okCodes: [1, 128] });
  if (parsed.code !== 0) {
    const ambiguous = /ambiguous/i.test(parsed.stderr);
    throw new KiwiError(ambiguous ? 'INVALID_INPUT' : 'NOT_FOUND', ambiguous ? `checkpoint id ${id} is ambiguous; give more of it` : `no checkpoint ${id} in ${wt.top}; \`kiwi checkpoints list\` shows them`);
  }
  const full = parsed.stdout.trim();
  const ancestor = await wt.git(['merge-base', '--is-ancestor', full, wt.ref], { okCodes: [1] });
  if (ancestor.code !== 0) throw new KiwiError('NOT_FOUND', `${id} is a commit but not a checkpoint of ${wt.top} (${wt.ref}); \`kiwi checkpoints list\` shows them`);
  return full;
}

/** The client a checkpoint was taken for (its `Kiwi-Client` trailer); undefined for one taken by a person (the CLI) or before clients were recorded. */
export async function checkpointClient(wt: WorkTree, id: string): Promise<string | undefined> {
  const body = (await wt.git(['log', '-1', '--format=%B', id, '--'])).stdout;
  return parseTrailers(body).get('Kiwi-Client');
}

function message(meta: CheckpointMeta, time: Date): string {
  return [
    `checkpoint before ${oneLine(meta.tool)}`,
    '',
    `Kiwi-Tool: ${oneLine(meta.tool)}`,
    `Kiwi-Call: ${oneLine(meta.callId)}`,
    `Kiwi-Session: ${oneLine(meta.session)}`,
    ...(meta.client === undefined ? [] : [`Kiwi-Client: ${oneLine(meta.client)}`]),
    `Kiwi-Time: ${time.toISOString()}`,
    '',
  ].join('\n');
}

function parseTrailers(body: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of body.split('\n')) {
    const m = /^(Kiwi-[A-Za-z]+): (.*)$/.exec(line);
    if (m) out.set(m[1] as string, m[2] as string);
  }
  return out;
}

/** Ids and names go into a commit message and reflog line: one line, printable, bounded. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f]+/g, ' ').slice(0, 200);
}
