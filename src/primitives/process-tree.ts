import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Finding and ending every process a subprocess started, including the ones that left its
 * process group. A process group alone is not enough: `setsid`, `setpgid` and double-forking
 * daemons leave it, and once their parent dies they are re-parented to init, so the ppid chain
 * is gone too. Three independent ties are therefore used on Linux, and any one suffices:
 *   - the process group / session of the direct child (it is a session leader: `detached`),
 *   - the ppid chain from the direct child or from any process already found,
 *   - an environment marker that every descendant inherits (read from /proc/<pid>/environ),
 *     which survives re-parenting; only processes started after the direct child are read.
 * Elsewhere only the process group is signalled.
 */

/** Name of the environment variable that marks every process of one subprocess tree. */
export const PROCESS_TREE_MARKER_ENV = 'KIWI_PROCESS_TREE_ID';

export interface ProcessTreeRoot {
  /** Pid of the direct child; also its process group and session id. */
  pid: number;
  /** Start time (clock ticks since boot) of the direct child; undefined where there is no /proc. */
  startTime: number | undefined;
  /** Value of PROCESS_TREE_MARKER_ENV in the child's environment. */
  marker: string | undefined;
  /** Settles when the direct child has exited (and been reaped). */
  exited: Promise<unknown>;
}

export interface EndTreeOptions {
  /** SIGTERM -> SIGKILL delay. */
  graceMs: number;
  /** SIGKILL rounds after the grace period before giving up. */
  maxKillRounds?: number;
}

export interface EndTreeResult {
  /** Pids still alive after every round; empty when the whole tree is gone. */
  survivors: number[];
}

interface ProcEntry {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  state: string;
  startTime: number;
}

const MAX_ENVIRON_BYTES = 1024 * 1024;
const MAX_POLL_MS = 250;
const SCAN_CHUNK = 256;

/** Reads the direct child's start time synchronously, right after spawn, before it can be reaped. */
export function readStartTime(pid: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.startTime;
  } catch {
    return undefined;
  }
}

function parseStat(text: string): ProcEntry | undefined {
  // comm (field 2) may contain spaces and parentheses; everything after the last ')' is fixed.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const fields = text.slice(close + 2).split(' ');
  const pid = Number(text.slice(0, open).trim());
  const [state, ppid, pgid, sid] = [fields[0], Number(fields[1]), Number(fields[2]), Number(fields[3])];
  const startTime = Number(fields[19]);
  if (state === undefined || !Number.isInteger(pid) || !Number.isInteger(ppid) || !Number.isFinite(startTime)) return undefined;
  return { pid, ppid, pgid, sid, state, startTime };
}

/**
 * procfs is generated in memory, so synchronous reads never wait on a disk and cost about a
 * tenth of a thread-pool round trip each; the event loop gets a turn every SCAN_CHUNK entries.
 */
async function readProcTable(): Promise<ProcEntry[]> {
  let names: string[];
  try {
    names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const entries: ProcEntry[] = [];
  for (let index = 0; index < names.length; index += 1) {
    if (index > 0 && index % SCAN_CHUNK === 0) await new Promise((resolve) => setImmediate(resolve));
    try {
      const entry = parseStat(readFileSync(`/proc/${names[index]}/stat`, 'utf8'));
      if (entry !== undefined) entries.push(entry);
    } catch {
      // exited between readdir and read
    }
  }
  return entries;
}

function environHasMarker(pid: number, needle: Buffer, buffer: Buffer): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/environ`, 'r');
    let length = 0;
    while (length < buffer.length) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    return buffer.subarray(0, length).includes(needle);
  } catch {
    return false; // gone, or not ours to read
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

const isAlive = (entry: ProcEntry): boolean => entry.state !== 'Z' && entry.state !== 'X';
const keyOf = (entry: ProcEntry): string => `${entry.pid}:${entry.startTime}`;

interface Found {
  pid: number;
  /** pid plus start time: stays unique when a pid is reused. */
  key: string;
}

/**
 * Holds what one tree walk has learnt, so later rounds still recognise processes whose ties
 * were cut (parent died) and never re-read an environ they already read.
 */
function createTreeScanner(root: ProcessTreeRoot): () => Promise<Found[]> {
  const known = new Set<string>();
  const environChecked = new Map<string, boolean>();
  const needle = root.marker === undefined ? undefined : Buffer.from(`${PROCESS_TREE_MARKER_ENV}=${root.marker}\0`);
  let buffer: Buffer | undefined; // allocated on first use: most scans have no candidates
  // Nothing started before the direct child can belong to its tree; this also keeps a reused
  // pgid or pid from pointing at an older, unrelated process.
  const rootStart = root.startTime ?? 0;

  return async function scan(): Promise<Found[]> {
    const table = (await readProcTable()).filter((e) => isAlive(e) && e.startTime >= rootStart && e.pid !== process.pid && e.pid > 1);
    const matched = new Map<number, ProcEntry>();
    for (const entry of table) {
      if (entry.pid === root.pid || entry.pgid === root.pid || entry.sid === root.pid || known.has(keyOf(entry))) {
        matched.set(entry.pid, entry);
      }
    }
    if (needle !== undefined && root.startTime !== undefined) {
      for (const entry of table) {
        if (matched.has(entry.pid)) continue;
        const key = keyOf(entry);
        let hit = environChecked.get(key);
        if (hit === undefined) {
          buffer ??= Buffer.allocUnsafe(MAX_ENVIRON_BYTES);
          hit = environHasMarker(entry.pid, needle, buffer);
          environChecked.set(key, hit);
        }
        if (hit) matched.set(entry.pid, entry);
      }
    }
    // Descendants through the ppid chain, to a fixpoint (catches those that cleared the marker).
    const children = new Map<number, ProcEntry[]>();
    for (const entry of table) {
      const siblings = children.get(entry.ppid);
      if (siblings === undefined) children.set(entry.ppid, [entry]);
      else siblings.push(entry);
    }
    const queue = [...matched.keys()];
    for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
      for (const child of children.get(pid) ?? []) {
        if (matched.has(child.pid)) continue;
        matched.set(child.pid, child);
        queue.push(child.pid);
      }
    }
    const found = [...matched.values()].map((entry) => ({ pid: entry.pid, key: keyOf(entry) }));
    for (const { key } of found) known.add(key);
    return found;
  };
}

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is empty
  }
}

function signalPids(found: Found[], signal: NodeJS.Signals): void {
  for (const { pid } of found) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * Ends the whole tree: SIGTERM (and SIGCONT, so stopped processes can act on it), then after
 * `graceMs` SIGKILL in bounded rounds. Resolves once the direct child has exited and a fresh
 * scan finds nothing of the tree left, or after the last round with the survivors listed.
 * Called after a normal exit too: when nothing is left it returns without signalling anyone.
 */
export async function endProcessTree(root: ProcessTreeRoot, options: EndTreeOptions): Promise<EndTreeResult> {
  // Without /proc the group is all we can see; pid `-pgid` makes signalPids signal the group.
  const scan =
    process.platform === 'linux' ? createTreeScanner(root) : async (): Promise<Found[]> => (signalGroup(root.pid, 0) ? [{ pid: -root.pid, key: 'group' }] : []);
  let rootExited = false;
  const exited = root.exited.then(() => {
    rootExited = true;
  });
  const never = new Promise<void>(() => undefined);
  const pause = (ms: number) => Promise.race([delay(ms), rootExited ? never : exited]);
  const finished = (found: Found[]): boolean => rootExited && found.length === 0;

  // Scan before signalling: while the tree is intact every ppid link still points into it.
  let alive = await scan();
  if (finished(alive)) return { survivors: [] };
  signalGroup(root.pid, 'SIGTERM');
  signalPids(alive, 'SIGTERM');
  signalGroup(root.pid, 'SIGCONT');
  signalPids(alive, 'SIGCONT');
  // Each process gets one SIGTERM: for many programs a second one means "stop cleaning up".
  const termed = new Set(alive.map((f) => f.key));

  const graceEnds = Date.now() + options.graceMs;
  for (let wait = 10; Date.now() < graceEnds; wait = Math.min(wait * 2, MAX_POLL_MS)) {
    await pause(Math.min(wait, Math.max(graceEnds - Date.now(), 0)));
    alive = await scan();
    if (finished(alive)) return { survivors: [] };
    const fresh = alive.filter((f) => !termed.has(f.key)); // forked since, or found only now
    signalPids(fresh, 'SIGTERM');
    signalPids(fresh, 'SIGCONT');
    for (const { key } of fresh) termed.add(key);
  }

  const rounds = options.maxKillRounds ?? 20;
  for (let round = 0; round < rounds; round += 1) {
    signalGroup(root.pid, 'SIGKILL');
    signalPids(alive, 'SIGKILL');
    await pause(Math.min(10 * 2 ** round, MAX_POLL_MS));
    alive = await scan();
    if (finished(alive)) return { survivors: [] };
  }
  return { survivors: alive.map((f) => f.pid) };
}
