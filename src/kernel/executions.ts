import { executionNotFound, type ExecutionScope, type OwnedExecution } from '../clients/access.js';
import { KiwiError } from '../base/errors.js';
import type { SqlDb, SqlQueryable, SqlValue } from '../store/sql/sql-db.js';
import { appendEvents, readEvents } from './event-log.js';
import { lockExecution, setExecutionStatus, type ExecutionRow } from './execution-rows.js';
import { checkExecutionBounds, DEFAULT_KERNEL_LIMITS, lockClientQuota, quotaExceeded, type KernelLimits } from './kernel-limits.js';
import { makeRoomInShare } from './client-share.js';
import { cancelOpenSteps } from './steps.js';
import { TERMINAL_STATUSES, type Execution, type ExecutionStatus, type KernelEvent } from './types.js';
import { uuidv7 } from './uuidv7.js';
import { parseUsage } from '../budgets/usage-summary.js';

/**
 * Executions (§5): created, read, listed newest first by cursor, cancelled; each change written
 * with its events in one transaction, under a lock on the execution's row, so that two gateways
 * on one database see one order of events. Assignment to agents, intents and steps build on
 * these (agents.ts, …). A new one is bounded (its input and labels) and counted against its
 * client's quota of live executions (kernel-limits.ts) and its share of what the kernel keeps,
 * which the client's oldest ended executions make room in (client-share.ts).
 */

export interface ExecutionFilter {
  /** Whose executions may be listed (clients/access.ts executionScope); absent: all. */
  scope?: ExecutionScope;
  status?: ExecutionStatus;
  agentId?: string;
  /** Every label must match. */
  labels?: Record<string, string>;
  cursor?: string;
  limit: number;
}

export interface ExecutionPage {
  executions: Omit<Execution, 'input' | 'output'>[];
  /** "" on the last page. */
  nextCursor: string;
}

export interface Executions {
  /**
   * `client`: whose it is (the client of the key that made it). Throws INVALID_INPUT past a
   * bound, QUOTA_EXCEEDED when the client has as many live executions as its quota allows, or
   * its executions not ended fill its share of what the kernel keeps.
   */
  create(input: { client: string; agentId: string; input: unknown; labels: Record<string, string> }): Promise<{ execution: Execution; events: KernelEvent[] }>;
  /** Throws NOT_FOUND. */
  get(id: string): Promise<Execution>;
  /** Whose the execution is, without its input and output. Throws NOT_FOUND. */
  ownerOf(id: string): Promise<OwnedExecution>;
  list(filter: ExecutionFilter): Promise<ExecutionPage>;
  /** Throws NOT_FOUND, or CONFLICT when it has ended. */
  cancel(id: string): Promise<{ execution: Execution; events: KernelEvent[] }>;
  /** Events after `afterSequence`, oldest first; none for an unknown id. */
  events(id: string, afterSequence: number, limit: number): Promise<KernelEvent[]>;
}

export function createExecutions(db: SqlDb, options: { now?: () => Date; limits?: Pick<KernelLimits, 'maxInputBytes' | 'maxLiveExecutionsPerClient' | 'maxExecutionsPerClient' | 'maxInputBytesPerClient'> } = {}): Executions {
  const now = options.now ?? (() => new Date());
  const limits = options.limits ?? DEFAULT_KERNEL_LIMITS;

  async function lockRow(tx: SqlQueryable, id: string): Promise<ExecutionRow> {
    const row = await lockExecution(tx, id);
    if (row === undefined) throw executionNotFound(id);
    return row;
  }

  return {
    async create({ client, agentId, input, labels }) {
      checkExecutionBounds(limits, input, labels);
      const inputText = JSON.stringify(input ?? null);
      const at = now();
      const id = uuidv7(at.getTime());
      const stamp = at.toISOString();
      return db.transaction(async (tx) => {
        // Counted under a lock per client: creates racing on several gateways cannot all pass at quota - 1.
        await lockClientQuota(tx, 'live-executions', client);
        const [live] = await tx.query<{ n: number }>("select count(*)::integer as n from kernel_executions where client = $1 and status in ('pending', 'running', 'blocked') and origin = 'api'", [client]);
        if ((live?.n ?? 0) >= limits.maxLiveExecutionsPerClient) {
          throw quotaExceeded('maxLiveExecutionsPerClient', client, `has ${live?.n ?? 0} executions not ended, the most it may have`, 'wait for some to end, or cancel those it no longer needs');
        }
        await makeRoomInShare(tx, limits, client, Buffer.byteLength(inputText, 'utf8'));
        await tx.query('insert into kernel_executions (id, agent_id, status, input, labels, created_at, updated_at, client) values ($1, $2, $3, $4, $5, $6, $6, $7)', [
          id,
          agentId,
          'pending',
          inputText,
          JSON.stringify(labels),
          stamp,
          client,
        ]);
        // One statement for all of them (issue 22: 40,000 labels inserted one by one took 28 s).
        await tx.query('insert into kernel_execution_labels (execution_id, key, value) select $1, key, value from json_each_text($2::json)', [id, JSON.stringify(labels)]);
        const events = await appendEvents(tx, id, [{ type: 'execution.created', payload: { agent_id: agentId, input: input ?? null, labels: Object.keys(labels).length === 0 ? null : labels } }], {}, at);
        return { execution: fromRow((await tx.query<ExecutionRow>('select * from kernel_executions where id = $1', [id]))[0] as ExecutionRow), events };
      });
    },

    async get(id) {
      const [row] = await db.query<ExecutionRow>('select * from kernel_executions where id = $1', [id]);
      if (row === undefined) throw executionNotFound(id);
      return fromRow(row);
    },

    async ownerOf(id) {
      const [row] = await db.query<{ client: string; agent_id: string }>('select client, agent_id from kernel_executions where id = $1', [id]);
      if (row === undefined) throw executionNotFound(id);
      return { id, client: row.client, agentId: row.agent_id };
    },

    async list(filter) {
      const where: string[] = [];
      const params: SqlValue[] = [];
      const param = (value: SqlValue): string => {
        params.push(value);
        return `$${params.length}`;
      };
      const scope = filter.scope;
      if (scope !== undefined && !scope.all) {
        // Its own client's, or of an agent id it serves: exact ids, or prefixes ending in `*`.
        const mine = [
          ...(scope.client === undefined ? [] : [`client = ${param(scope.client)}`]),
          ...scope.agents.map((a) => (a.endsWith('*') ? `starts_with(agent_id, ${param(a.slice(0, -1))})` : `agent_id = ${param(a)}`)),
        ];
        where.push(mine.length === 0 ? 'false' : `(${mine.join(' or ')})`);
      }
      if (filter.status !== undefined) where.push(`status = ${param(filter.status)}`);
      if (filter.agentId !== undefined) where.push(`agent_id = ${param(filter.agentId)}`);
      for (const [key, value] of Object.entries(filter.labels ?? {})) {
        // A chat written whole has no label rows (chat-rows.ts): its own column says.
        const [k, v] = [param(key), param(value)];
        where.push(`(exists (select 1 from kernel_execution_labels l where l.execution_id = e.id and l.key = ${k} and l.value = ${v}) or (e.folded_events is not null and e.labels::json ->> ${k} = ${v}))`);
      }
      if (filter.cursor !== undefined) {
        const { createdAt, id } = decodeCursor(filter.cursor);
        where.push(`(created_at, id) < (${param(createdAt)}, ${param(id)})`);
      }
      // Only what a list shows, never the inputs and outputs (issue 39: a page of 50 with 250 KB
      // inputs took 3.5 s and stalled the gateway). One row past the page says whether there is
      // a next one; the page also ends before its labels pass LIST_PAGE_LABEL_BYTES (64 labels
      // can be 20 KB an execution), counted by the database, so a row past it is never sent.
      const rows = await db.query<SummaryRow>(
        `select * from (
           select ${SUMMARY_COLUMNS},
             sum(octet_length(labels)) over (order by created_at desc, id desc) as label_bytes, row_number() over (order by created_at desc, id desc) as n, count(*) over () as fetched
           from (select ${SUMMARY_COLUMNS} from kernel_executions e ${where.length === 0 ? '' : `where ${where.join(' and ')}`} order by created_at desc, id desc limit ${param(filter.limit + 1)}) e
         ) page where n = 1 or label_bytes <= ${param(LIST_PAGE_LABEL_BYTES)} order by created_at desc, id desc`,
        params,
      );
      const page = rows.slice(0, filter.limit);
      const last = page.at(-1);
      return {
        executions: page.map(fromSummaryRow),
        nextCursor: Number(rows[0]?.fetched ?? 0) > page.length && last !== undefined ? encodeCursor(last.created_at, last.id) : '',
      };
    },

    async cancel(id) {
      const at = now();
      return db.transaction(async (tx) => {
        const row = await lockRow(tx, id);
        if (TERMINAL_STATUSES.has(row.status)) throw new KiwiError('CONFLICT', `execution is in terminal state: execution ${id} is ${row.status}`);
        const stepEvents = await cancelOpenSteps(tx, id, 'execution cancelled', at);
        // Jobs not yet sent are dropped; a runner that reports one already sent hears 409 (§5).
        await tx.query("delete from kernel_jobs where execution_id = $1 and state = 'queued'", [id]);
        await setExecutionStatus(tx, id, 'cancelled', at);
        const events = await appendEvents(tx, id, [{ type: 'execution.cancelled', payload: { reason: 'cancelled by request' } }], {}, at);
        return { execution: fromRow(await lockRow(tx, id)), events: [...stepEvents, ...events] };
      });
    },

    events: (id, afterSequence, limit) => readEvents(db, id, afterSequence, limit),
  };
}


/** A page's labels together, at most (a single larger execution still goes alone). */
export const LIST_PAGE_LABEL_BYTES = 1024 * 1024;

/** What a list reads of an execution. */
const SUMMARY_COLUMNS = 'id, status, client, agent_id, labels, usage, created_at, updated_at';
type SummaryRow = Pick<ExecutionRow, 'id' | 'status' | 'client' | 'agent_id' | 'labels' | 'usage' | 'created_at' | 'updated_at'> & { fetched: number | string };

function fromSummaryRow(r: Omit<SummaryRow, 'fetched'>): ExecutionPage['executions'][number] {
  const usage = r.usage === null ? undefined : parseUsage(JSON.parse(r.usage));
  return {
    id: r.id,
    status: r.status,
    client: r.client,
    agentId: r.agent_id,
    labels: JSON.parse(r.labels) as Record<string, string>,
    ...(usage === undefined ? {} : { usage }),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function fromRow(r: ExecutionRow): Execution {
  const output = r.output === null ? null : (JSON.parse(r.output) as unknown);
  return { ...fromSummaryRow(r), input: JSON.parse(r.input) as unknown, ...(output === null ? {} : { output }) };
}

/** Opaque to clients: base64 of `<created_at>|<id>` of the last row of a page (§5). */
function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(`${createdAt}|${id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const bar = text.indexOf('|');
  const createdAt = text.slice(0, bar);
  const id = text.slice(bar + 1);
  if (bar === -1 || Number.isNaN(Date.parse(createdAt)) || id === '') throw new KiwiError('INVALID_INPUT', 'invalid cursor: pass the next_cursor of a previous page unchanged');
  return { createdAt, id };
}
