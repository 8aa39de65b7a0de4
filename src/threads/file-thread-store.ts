import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { processAlive } from '../base/process-alive.js';
import { headerOf, parseThreadLine, transcript } from './parse-thread-line.js';
import { checkThreadId, isThreadId, MAX_LINE_BYTES, MAX_THREAD_BYTES, noSuchThread, threadLineJson, threadTooLarge, type ThreadLine, type ThreadStore, type ThreadSummary, type ThreadWriter } from './thread-store.js';

/**
 * Threads on disk, for one gateway (the default): one JSONL file per thread under `.ai/threads/`.
 * Every line is written and synced as it happens. While a process writes a thread it holds
 * `<id>.lock` (its pid and host): a lock whose process is gone (a crash) is taken over.
 */

export const THREADS_DIR = path.join('.ai', 'threads');

export function fileThreadStore(root: string): ThreadStore {
  const dir = path.join(root, THREADS_DIR);
  const fileOf = (id: string): string => {
    checkThreadId(id);
    return path.join(dir, `${id}.jsonl`);
  };
  const lockOf = (id: string): string => path.join(dir, `${id}.lock`);
  const running = (id: string): boolean => {
    const holder = lockHolder(lockOf(id));
    return holder !== undefined && isAlive(holder);
  };
  const writing = (id: string, flags: 'wx' | 'a', first: string): ThreadWriter => {
    const unlock = lockThread(lockOf(id), id);
    try {
      return openWriter(fileOf(id), flags, first, unlock);
    } catch (error) {
      unlock();
      throw error;
    }
  };
  return {
    where: `${THREADS_DIR}/`,
    async create(header) {
      checkThreadId(header.id);
      const first = threadLineJson(header); // refused before anything is on disk
      mkdirSync(dir, { recursive: true });
      return writing(header.id, 'wx', first);
    },
    async reopen(id, resume) {
      if (statSync(fileOf(id), { throwIfNoEntry: false }) === undefined) throw noSuchThread(id);
      return writing(id, 'a', threadLineJson(resume));
    },
    async read(id) {
      let text: string;
      try {
        text = (await readCappedFile(fileOf(id), MAX_THREAD_BYTES, (size) => threadTooLarge(id, size, fileOf(id)))).toString('utf8');
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ENOENT') throw noSuchThread(id);
        throw error;
      }
      return transcript(text.split('\n'), id);
    },
    async stamp(id) {
      const info = statSync(fileOf(id), { throwIfNoEntry: false });
      if (info === undefined) throw noSuchThread(id);
      return `${info.size}:${info.mtimeMs}`;
    },
    async readHeader(id) {
      const header = headerOf((await readEdges(fileOf(id))).header, id);
      if (header === undefined) throw noSuchThread(id);
      return header;
    },
    async list(limit = 50) {
      let names: string[];
      try {
        names = readdirSync(dir).filter((n) => n.endsWith('.jsonl') && isThreadId(n.slice(0, -6)));
      } catch {
        return [];
      }
      const newest = names
        .map((n) => ({ id: n.slice(0, -6), at: statSync(path.join(dir, n)).mtimeMs }))
        .sort((a, b) => b.at - a.at)
        .slice(0, limit);
      const out: ThreadSummary[] = [];
      for (const { id } of newest) {
        const { header: first, last } = await readEdges(fileOf(id));
        const header = headerOf(first, id);
        if (header === undefined) continue;
        out.push(last?.type === 'end' ? { header, end: last, running: false } : { header, running: running(id) });
      }
      return out;
    },
    async isRunning(id) {
      checkThreadId(id);
      return running(id);
    },
  };
}

function openWriter(file: string, flags: 'wx' | 'a', first: string, unlock: () => void): ThreadWriter {
  const fd = openSync(file, flags, 0o600);
  let open = true;
  // A crash mid-write leaves a torn last line: the next line starts on a line of its own.
  if (flags === 'a' && !endsWithNewline(file)) writeSync(fd, '\n');
  const write = (json: string): void => {
    if (!open) return;
    writeSync(fd, `${json}\n`);
    fsyncSync(fd);
  };
  try {
    write(first);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return {
    async append(record) {
      write(threadLineJson(record));
    },
    async close() {
      if (!open) return;
      open = false;
      closeSync(fd);
      unlock();
    },
  };
}

function endsWithNewline(file: string): boolean {
  const size = statSync(file).size;
  if (size === 0) return true;
  const fd = openSync(file, 'r');
  try {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    closeSync(fd);
  }
}

/**
 * Takes the lock file: its holder's pid and host. A lock whose process is gone (a crash) is taken
 * over; one held by a live process is a CONFLICT naming it.
 */
function lockThread(file: string, id: string): () => void {
  // Written whole before it is linked into place: a lock is never seen half written.
  const draft = `${file}.${process.pid}.${randomUUID()}`;
  writeFileSync(draft, JSON.stringify({ pid: process.pid, host: hostname() }), { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(draft, file);
        return () => rmSync(file, { force: true });
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'EEXIST' || attempt > 0) throw error;
        const holder = lockHolder(file);
        if (holder !== undefined && isAlive(holder)) {
          throw new KiwiError('CONFLICT', `thread ${id} is still running (process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}); wait for it to end, or stop that process`);
        }
        rmSync(file, { force: true });
      }
    }
  } finally {
    rmSync(draft, { force: true });
  }
}

function lockHolder(file: string): { pid: number; host: string } | undefined {
  try {
    const held = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; host?: unknown };
    return typeof held.pid === 'number' && typeof held.host === 'string' ? { pid: held.pid, host: held.host } : undefined;
  } catch {
    return undefined; // gone, or not a lock this code wrote
  }
}

/** On another host nothing can be checked: its lock is taken as held. */
function isAlive(holder: { pid: number; host: string }): boolean {
  if (holder.host !== hostname()) return true;
  return holder.pid === process.pid || processAlive(holder.pid);
}

/** A line is at most MAX_LINE_BYTES, so the edges of a file hold its first and last lines. */
const EDGE_BYTES = MAX_LINE_BYTES;

/** A thread's first and last lines, read from the ends of its file: `list` never reads a long transcript whole. */
async function readEdges(file: string): Promise<{ header?: ThreadLine | undefined; last?: ThreadLine | undefined }> {
  const handle = await open(file, 'r').catch(() => undefined);
  if (handle === undefined) return {};
  try {
    const { size } = await handle.stat();
    const read = async (at: number, length: number): Promise<string> => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, at);
      return buffer.subarray(0, bytesRead).toString('utf8');
    };
    const head = (await read(0, Math.min(size, EDGE_BYTES))).split('\n');
    const tail = size <= EDGE_BYTES ? head : (await read(size - EDGE_BYTES, EDGE_BYTES)).split('\n').slice(1); // its first piece may be a line cut in two
    const last = tail.filter((l) => l !== '').at(-1);
    return { header: head[0] ? parseThreadLine(head[0]) : undefined, last: last === undefined ? undefined : parseThreadLine(last) };
  } finally {
    await handle.close();
  }
}
