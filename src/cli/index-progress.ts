/**
 * What the commands that bring the search index up to date before they answer (`kiwi serve`,
 * `index`, `mcp`, `resolve`, `directives run`…) say while they embed: a first start on a large
 * registry embeds for minutes, and silence looks like a hang. It says what is happening first;
 * then, on a terminal, one counter line rewritten in place, elsewhere (a log file, CI) a line every
 * EVERY_ITEMS embedded or EVERY_MS; then a line with the count and the time. Nothing at all when
 * nothing needs embedding (every later start).
 */
import type { IndexedTable, IndexProgress } from '../resolver/resolver-runtime.js';
import type { TableState } from '../store/tool-index.js';
import type { CliIo } from './io.js';

/** Where every project command keeps its index (openProjectResolverRuntime). */
const INDEX_FOLDER = '.ai/vectors';
const EVERY_ITEMS = 200;
const EVERY_MS = 5_000;

const NOUN: Record<IndexedTable, string> = { tools: 'tools', items: 'directives and knowledge entries' };

export interface IndexProgressOptions {
  /** Milliseconds, for the lines between and the time in the last (default performance.now). */
  now?: () => number;
  /** The last line, with the count and the time; off where the command prints a summary of its own. */
  summary?: boolean;
}

export function createIndexProgress(io: CliIo, options: IndexProgressOptions = {}): IndexProgress {
  const now = options.now ?? (() => performance.now());
  const status = io.status;
  let startedAt: number | undefined;
  const embedded: Partial<Record<IndexedTable, number>> = {};
  let lineAt = { done: 0, ms: 0 };
  const counter = (table: IndexedTable, done: number, total: number): string => `kiwi: indexing ${NOUN[table]}: ${done}/${total} embedded`;

  return {
    start(table, total, state) {
      const first = startedAt === undefined;
      startedAt ??= now();
      embedded[table] = total;
      io.err(`kiwi: ${announce(table, total, state, first)}`);
      lineAt = { done: 0, ms: now() };
      status?.(counter(table, 0, total));
    },
    embedded(table, done, total) {
      if (status) return status(counter(table, done, total));
      if (done === total) return; // the last line says it
      const ms = now();
      if (done - lineAt.done < EVERY_ITEMS && ms - lineAt.ms < EVERY_MS) return;
      lineAt = { done, ms };
      io.err(counter(table, done, total));
    },
    end() {
      if (startedAt === undefined) return;
      status?.('');
      if (options.summary === false) return;
      const counts = (['tools', 'items'] as const).flatMap((t) => (embedded[t] === undefined ? [] : [`${embedded[t]} ${NOUN[t]}`]));
      io.err(`kiwi: search index ready: ${counts.join(' and ')} embedded into ${INDEX_FOLDER} in ${((now() - startedAt) / 1000).toFixed(1)} s`);
    },
  };
}

/** The line before a table's first batch; the first of a sync that starts a table empty says why it takes a while and that it is once. */
function announce(table: IndexedTable, total: number, state: TableState, first: boolean): string {
  const line = `embedding ${total} ${state === 'kept' ? 'new or changed ' : ''}${NOUN[table]} into ${INDEX_FOLDER}`;
  if (!first || state === 'kept') return line;
  return `${state === 'new' ? 'first start' : 'rebuilding the search index'}: ${line}; later starts reuse it`;
}
