import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { describeError, KiwiError } from '../base/errors.js';
import type { BudgetTotals } from './budget-types.js';
import { HOUR_MS, hourOf } from './budget-window.js';
import { clientsOf, createHourlyTotals, ledgerKeyName } from './hourly-totals.js';

/**
 * What clients (and directive runs) used, as an append-only JSONL file per UTC day under
 * `.ai/state/budgets/`: one line per upstream turn (`estimated: true` when its tokens are the
 * gateway's estimate, not the upstream's count), tool call or spawn, written (and synced)
 * as it happens, so a crash or restart loses at most the line being written. Totals are kept in
 * memory per hour, so any window of whole hours is a sum of buckets.
 *
 * Why a file and not the kernel's database: it is the simplest thing that is correct here. One
 * process appends in order; several gateways on one machine append whole lines with O_APPEND and
 * each catches up on the others' lines before it admits a request (`refresh`), skipping its
 * own (each line names its writer). A torn last line (a crash mid-write) is never read as a
 * record. Gateways on several machines need a shared store: Redis, as DESIGN §7 plans.
 */

export interface LedgerEntry {
  at: number;
  client: string;
  model?: string;
  input: number;
  output: number;
  /** Absent when the model has no price: its tokens count, its spend is unknown. */
  usd?: number;
  toolCalls: number;
  spawns: number;
  turns: number;
  directive?: string;
  run?: string;
  /** The tokens (and their spend) are the gateway's estimate, not the upstream's count (token-estimate.ts). */
  estimated?: boolean;
}

export type LedgerKey = { client: string } | { run: string };

export interface BudgetLedger {
  /**
   * Counted at once; written in order, what piles up meanwhile in one write. Resolves once the
   * entry is durable (or its write failed: it still counts here). Never rejects.
   */
  record(entry: LedgerEntry): Promise<void>;
  /** What `key` used from `since` (rounded down to the hour) on. */
  totals(key: LedgerKey, since: number): BudgetTotals;
  /** The clients that used something from `since` (rounded down to the hour) on, as far as this ledger knows (refresh first). */
  clients(since: number): Promise<string[]>;
  /** Catches up on what other processes recorded (for `keys` at least: a ledger may look at those alone). */
  refresh(keys?: readonly LedgerKey[]): Promise<void>;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface BudgetLedgerOptions {
  /** `.ai/state/budgets`. */
  dir: string;
  /** How far back totals are needed (the longest window): older days are not read at start. */
  retainMs: number;
  now?: () => number;
  /** A line that could not be written (the totals in memory still count it). */
  onError?: (message: string) => void;
}

const lineSchema = z.object({
  w: z.string(),
  at: z.number(),
  client: z.string(),
  in: z.number().nonnegative(),
  out: z.number().nonnegative(),
  usd: z.number().nonnegative().optional(),
  calls: z.number().nonnegative(),
  spawns: z.number().nonnegative(),
  turns: z.number().nonnegative(),
  run: z.string().optional(),
  estimated: z.literal(true).optional(),
});

const DAY_MS = 24 * HOUR_MS;
const dayFile = (at: number): string => `${new Date(at).toISOString().slice(0, 10)}.jsonl`;

export async function openBudgetLedger(options: BudgetLedgerOptions): Promise<BudgetLedger> {
  const now = options.now ?? Date.now;
  const writer = randomUUID();
  const totals = createHourlyTotals();
  /** Bytes of each day file already read (through its last whole line). */
  const offsets = new Map<string, number>();
  let lastDay = '';
  const pending: { entry: LedgerEntry; settle: () => void }[] = [];
  let writing: Promise<void> | undefined;
  const checked = new Set<string>();

  const count = (line: z.output<typeof lineSchema>): void => {
    totals.add(ledgerKeyName({ client: line.client }), line.at, line);
    if (line.run !== undefined) totals.add(ledgerKeyName({ run: line.run }), line.at, line);
  };

  async function readNew(name: string): Promise<void> {
    const file = path.join(options.dir, name);
    const from = offsets.get(name) ?? 0;
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    if (size <= from) return;
    const handle = await open(file, 'r');
    try {
      const buffer = Buffer.alloc(size - from);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, from);
      const end = buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1;
      offsets.set(name, from + end);
      for (const text of buffer.subarray(0, end).toString('utf8').split('\n')) {
        if (text === '') continue;
        let parsed;
        try {
          parsed = lineSchema.safeParse(JSON.parse(text));
        } catch {
          continue; // a line torn by a crash, glued to the next: not a record
        }
        if (parsed.success && parsed.data.w !== writer) count(parsed.data);
      }
    } finally {
      await handle.close();
    }
  }

  /** An entry as its line in the file, and as `count` takes it. */
  const toLine = (entry: LedgerEntry) => ({ w: writer, at: entry.at, client: entry.client, ...(entry.model === undefined ? {} : { model: entry.model }), in: entry.input, out: entry.output, ...(entry.usd === undefined ? {} : { usd: entry.usd }), calls: entry.toolCalls, spawns: entry.spawns, turns: entry.turns, ...(entry.directive === undefined ? {} : { directive: entry.directive }), ...(entry.run === undefined ? {} : { run: entry.run }), ...(entry.estimated === true ? { estimated: true as const } : {}) });

  async function append(name: string, lines: string[]): Promise<void> {
    const handle = await open(path.join(options.dir, name), 'a+');
    try {
      // After a crash mid-line, start on a line of our own so that only the torn one is lost.
      let lead = '';
      if (!checked.has(name)) {
        checked.add(name);
        const { size } = await handle.stat();
        const last = Buffer.alloc(1);
        if (size > 0 && (await handle.read(last, 0, 1, size - 1)).bytesRead === 1 && last[0] !== 0x0a) lead = '\n';
      }
      await handle.write(`${lead}${lines.join('\n')}\n`);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  function kick(): void {
    if (writing !== undefined) return;
    writing = drain().finally(() => {
      writing = undefined;
      if (pending.length > 0) kick(); // recorded after the drain's last look
    });
  }

  /** Writes what is pending, all of a day's lines in one synced write, until nothing is. */
  async function drain(): Promise<void> {
    while (pending.length > 0) {
      const batch = pending.splice(0);
      const byDay = new Map<string, string[]>();
      for (const { entry } of batch) {
        const name = dayFile(entry.at);
        let lines = byDay.get(name);
        if (lines === undefined) byDay.set(name, (lines = []));
        lines.push(JSON.stringify(toLine(entry)));
      }
      for (const [name, lines] of byDay) {
        await append(name, lines).catch((error: unknown) => options.onError?.(`budget ledger: could not write ${lines.length} record(s) (${describeError(error)}); they count until the gateway restarts`));
      }
      for (const { settle } of batch) settle();
    }
  }

  const flush = async (): Promise<void> => {
    while (writing !== undefined) await writing;
  };

  await mkdir(options.dir, { recursive: true });
  try {
    const first = dayFile(now() - options.retainMs - DAY_MS);
    for (const name of (await readdir(options.dir)).filter((n) => /^\d{4}-\d{2}-\d{2}\.jsonl$/.test(n) && n >= first).sort()) await readNew(name);
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `cannot read the budget ledger in ${options.dir}: ${describeError(error)}`, { cause: error });
  }
  lastDay = dayFile(now());

  return {
    record(entry) {
      count(toLine(entry));
      let settle!: () => void;
      const written = new Promise<void>((resolve) => (settle = resolve));
      pending.push({ entry, settle });
      kick();
      return written;
    },
    totals: (key, since) => totals.sum(ledgerKeyName(key), since),
    clients: async (since) => clientsOf(totals.keys(since)),
    async refresh() {
      // Other writers append to the day of their clock: the day last looked at and today.
      const today = dayFile(now());
      for (const name of new Set([lastDay, today])) await readNew(name);
      lastDay = today;
      totals.prune(hourOf(now() - options.retainMs - HOUR_MS));
    },
    flush,
    // Nothing is held open between writes, so closing is waiting for the last one.
    close: flush,
  };
}
