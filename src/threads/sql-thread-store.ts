import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { KiwiError } from '../base/errors.js';
import { heartbeatMs } from '../kernel/instances.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { headerOf, parseThreadLine, transcript } from './parse-thread-line.js';
import { checkThreadId, MAX_THREAD_BYTES, noSuchThread, threadLineJson, threadTooLarge, type ThreadStore, type ThreadSummary, type ThreadWriter } from './thread-store.js';

/**
 * Threads in the Postgres that replicas share (DATABASE_URL; tables `threads` and `thread_lines`,
 * kernel migration 15): a thread started through one gateway is listed, read, followed and resumed
 * through any other. Each line is one statement, committed before `append` resolves (Postgres
 * syncs its log at commit), as the files sync each line.
 *
 * Who writes a thread is a hold: the writing process's token in the thread's row, with a time it
 * lapses at (`held_until`, the database's clock, so replicas' clocks need not agree). The process
 * renews every hold it has a few times within `holdMs`, and each line it writes renews that one;
 * a process that dies (SIGKILL, a lost machine) stops renewing, and after `holdMs` another may
 * resume the thread. Every line is written only while the row still names this process, so a
 * process that was silent too long (paused, cut off from the database) and lost its thread to
 * another finds out at its next line (CONFLICT) instead of interleaving with it.
 *
 * Why a hold of its own rather than the kernel's instances (kernel/instances.ts) or a session
 * advisory lock: `kiwi directives run` and `kiwi threads resume` write threads too, and the kernel
 * opens lazily and may not be open when a thread starts; an advisory lock lives as long as one
 * connection, so a thread would pin a connection of the pool while it runs, a connection Postgres
 * has not yet seen drop (a half-open TCP connection, for hours) would keep a dead thread held, and
 * a dropped connection would let go silently while the thread is still being written.
 */

export interface SqlThreadStoreOptions {
  /** How long a hold lasts unrenewed: the gateway's kernel.instance_timeout_ms (default 45 s). */
  holdMs?: number;
  /** Names this process in messages to others (default: pid and host). */
  holderName?: string;
}

const DEFAULT_HOLD_MS = 45_000;
const WHERE = 'the threads table of DATABASE_URL';
/** When a hold taken or renewed now lapses: `param` holds holdMs. */
const holdUntil = (param: string): string => `now() + ${param}::integer * interval '1 millisecond'`;

export function sqlThreadStore(db: SqlDb, options: SqlThreadStoreOptions = {}): ThreadStore {
  const holdMs = options.holdMs ?? DEFAULT_HOLD_MS;
  const holder = randomUUID();
  const holderName = options.holderName ?? `process ${process.pid} on ${hostname()}`;
  const holds = createRenewals(db, holder, holdMs);

  const writer = (id: string): ThreadWriter => {
    let open = true;
    holds.add();
    return {
      async append(record) {
        if (!open) return;
        const json = threadLineJson(record);
        // One statement: the line and the thread's row together, or neither; nothing unless this process still holds it.
        const rows = await db.query(
          `with held as (
             update threads set lines = lines + 1, bytes = bytes + $3::bigint, last_line = $4, written_at = now(), held_until = ${holdUntil('$5')}
             where id = $1 and holder = $2 returning lines
           )
           insert into thread_lines (thread_id, seq, line) select $1, lines, $4 from held returning seq`,
          [id, holder, Buffer.byteLength(json), json, holdMs],
        );
        if (rows.length === 0) throw new KiwiError('CONFLICT', `thread ${id} was taken over by another process: this one (${holderName}) did not renew its hold for ${holdMs} ms; the line was not written`);
      },
      async close() {
        if (!open) return;
        open = false;
        holds.remove();
        await db.query('update threads set holder = null, held_by = null, held_until = null where id = $1 and holder = $2', [id, holder]);
      },
    };
  };

  return {
    where: WHERE,
    async create(header) {
      checkThreadId(header.id);
      const json = threadLineJson(header);
      const rows = await db.query(
        `with thread as (
           insert into threads (id, client, directive, header, last_line, lines, bytes, written_at, holder, held_by, held_until)
           values ($1, $2, $3, $4, $4, 1, $5::bigint, now(), $6, $7, ${holdUntil('$8')})
           on conflict (id) do nothing returning id
         )
         insert into thread_lines (thread_id, seq, line) select id, 1, $4 from thread returning seq`,
        [header.id, header.client, header.directive, json, Buffer.byteLength(json), holder, holderName, holdMs],
      );
      if (rows.length === 0) throw new KiwiError('CONFLICT', `a thread ${header.id} already exists in ${WHERE}`);
      return writer(header.id);
    },
    async reopen(id, resume) {
      checkThreadId(id);
      threadLineJson(resume); // a line too large is refused before the thread is taken
      const taken = await db.query(`update threads set holder = $2, held_by = $3, held_until = ${holdUntil('$4')} where id = $1 and (holder is null or held_until <= now()) returning id`, [id, holder, holderName, holdMs]);
      if (taken.length === 0) {
        const [row] = await db.query<{ held_by: string | null; free_in_ms: number | string }>('select held_by, extract(epoch from (held_until - now())) * 1000 as free_in_ms from threads where id = $1', [id]);
        if (row === undefined) throw noSuchThread(id);
        throw new KiwiError('CONFLICT', `thread ${id} is still running (${row.held_by ?? 'another process'}); wait for it to end, or stop that process (if it has died, the thread is free within ${Math.max(1, Math.ceil(Number(row.free_in_ms) / 1000))} s)`);
      }
      const w = writer(id);
      try {
        await w.append(resume);
        return w;
      } catch (error) {
        await w.close().catch(() => undefined);
        throw error;
      }
    },
    async read(id) {
      checkThreadId(id);
      const [row] = await db.query<{ lines: number; bytes: number | string }>('select lines, bytes from threads where id = $1', [id]);
      if (row === undefined) throw noSuchThread(id);
      if (Number(row.bytes) > MAX_THREAD_BYTES) throw threadTooLarge(id, Number(row.bytes), WHERE);
      // Up to the line counted with the size: a line written meanwhile waits for the next read.
      const rows = await db.query<{ line: string }>('select line from thread_lines where thread_id = $1 and seq <= $2 order by seq', [id, row.lines]);
      return transcript(rows.map((r) => r.line), id);
    },
    async stamp(id) {
      checkThreadId(id);
      const [row] = await db.query<{ lines: number | string }>('select lines from threads where id = $1', [id]);
      if (row === undefined) throw noSuchThread(id);
      return String(row.lines);
    },
    async readHeader(id) {
      checkThreadId(id);
      const [row] = await db.query<{ header: string }>('select header from threads where id = $1', [id]);
      const header = row === undefined ? undefined : headerOf(parseThreadLine(row.header), id);
      if (header === undefined) throw noSuchThread(id);
      return header;
    },
    async list(limit = 50) {
      const rows = await db.query<{ id: string; header: string; last_line: string; running: boolean }>(
        'select id, header, last_line, (holder is not null and held_until > now()) as running from threads order by written_at desc, id desc limit $1',
        [Math.max(0, Math.floor(limit))],
      );
      const out: ThreadSummary[] = [];
      for (const row of rows) {
        const header = headerOf(parseThreadLine(row.header), row.id);
        if (header === undefined) continue;
        const last = parseThreadLine(row.last_line);
        out.push(last?.type === 'end' ? { header, end: last, running: false } : { header, running: row.running });
      }
      return out;
    },
    async isRunning(id) {
      checkThreadId(id);
      const [row] = await db.query<{ running: boolean }>('select (holder is not null and held_until > now()) as running from threads where id = $1', [id]);
      return row?.running === true;
    },
  };
}

/**
 * Renews every hold of this process in one statement, a few times within `holdMs`, while it
 * holds any: a thread waiting long on a tool or a person writes no line, yet stays held.
 */
function createRenewals(db: SqlDb, holder: string, holdMs: number): { add(): void; remove(): void } {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const renew = (): void => {
    // A failed renewal is tried again at the next beat; the next line written says if the hold was lost.
    void db.query(`update threads set held_until = ${holdUntil('$2')} where holder = $1`, [holder, holdMs]).catch(() => undefined);
  };
  return {
    add() {
      if (open++ > 0) return;
      timer = setInterval(renew, heartbeatMs(holdMs));
      timer.unref(); // the writers keep the process alive, not their holds
    },
    remove() {
      if (--open > 0) return;
      clearInterval(timer);
      timer = undefined;
    },
  };
}
