import { KiwiError } from '../base/errors.js';
import type { SqlDb, SqlQueryable, SqlValue } from '../store/sql/sql-db.js';
import {
  lockClientQuota,
  MAX_DESCRIPTION_CHARS,
  MAX_INPUT_SCHEMA_BYTES,
  MAX_TOOL_ID_CHARS,
  MAX_TOOLS_PER_RUNNER,
  quotaExceeded,
  TOOLS_PAGE_MAX,
  TOOLS_PAGE_MAX_BYTES,
  type KernelLimits,
} from './kernel-limits.js';

/**
 * Runners and the tool schemas they publish (§7.5, §7.6), in the database so that every gateway
 * on it lists the same tools. A publish replaces all of that runner's schemas; a tool id
 * published by several runners is listed once, from the newest publish. A client's runners and
 * their schemas are bounded by its quotas (kernel-limits.ts), checked under a lock per client.
 */

export interface ToolSchemaInput {
  id: string;
  description: string;
  /** A JSON Schema object, or null when none was sent. */
  inputSchema: Record<string, unknown> | null;
}

export interface PublishedTool extends ToolSchemaInput {
  runnerId: string;
  /** RFC 3339 with milliseconds: when its runner published it. */
  registeredAt: string;
}

export interface ToolsPage {
  tools: PublishedTool[];
  /** The id to pass as `after` for the next page; absent on the last. */
  next?: string;
}

export interface ToolSchemas {
  /** Stores the runner's record, if new, as `client`'s (within its runner quota), and notes that it was seen now. */
  record(runnerId: string, client: string): Promise<void>;
  /** The client whose runner it is; undefined for a runner never heard of. */
  ownerOf(runnerId: string): Promise<string | undefined>;
  /** Replaces the runner's schemas (its record stored too, as `client`'s if new), within the client's quotas. */
  publish(runnerId: string, client: string, tools: readonly ToolSchemaInput[]): Promise<void>;
  /** The tool ids the runner published. */
  toolsOf(runnerId: string): Promise<string[]>;
  /**
   * Newest publisher per id, by id in byte order, one bounded page (at most `limit`, TOOLS_PAGE_MAX
   * and TOOLS_PAGE_MAX_BYTES of stored schemas) after the id `after`; `prefix` keeps `id == prefix`
   * and ids that start with `prefix_`.
   */
  list(options?: { prefix?: string; after?: string; limit?: number }): Promise<ToolsPage>;
  /** Drops the runner's schemas, keeps its record (noting that it was seen now). */
  forget(runnerId: string): Promise<void>;
  /** Drops the runner's record and schemas; false when it had no record. */
  unregister(runnerId: string): Promise<boolean>;
}

// Postgres takes at most 65,535 parameters in one statement: 6 a row.
const ROWS_PER_STATEMENT = 1000;

interface ToolRow extends Record<string, unknown> {
  runner_id: string;
  tool_id: string;
  description: string;
  input_schema: string | null;
  registered_at: string;
  /** What the rows up to this one weigh, by id (the page's bound). */
  running_bytes: number | string;
  /** How many tools the whole list has, pages after this one included. */
  total: number | string;
}

/** What a schema weighs as stored, the measure of the per-client byte quota and of a page of GET /v0/tools. */
const STORED_BYTES = 'octet_length(tool_id) + octet_length(description) + coalesce(octet_length(input_schema), 0)';

export function createToolSchemas(db: SqlDb, now: () => Date, limits: Pick<KernelLimits, 'maxRunnersPerClient' | 'maxToolsPerClient' | 'maxToolBytesPerClient'>): ToolSchemas {
  /** The runner's record, locked, noted as seen at `at`; a new one is `client`'s, if its runner quota has room. */
  async function recordIn(tx: SqlQueryable, runnerId: string, client: string, at: string): Promise<void> {
    const touched = await tx.query('update kernel_runners set seen_at = $2 where id = $1 returning id', [runnerId, at]);
    if (touched.length > 0) return;
    await lockClientQuota(tx, 'runners', client);
    const [row] = await tx.query<{ n: number }>('select count(*)::integer as n from kernel_runners where client = $1', [client]);
    if ((row?.n ?? 0) >= limits.maxRunnersPerClient) {
      throw quotaExceeded('maxRunnersPerClient', client, `has ${row?.n ?? 0} runners, the most it may have`, 'unregister runners it no longer uses (DELETE /v0/runners/{id}; one with no stream is forgotten after the retention time)');
    }
    // A racing insert of the same id (another client's, on another gateway) wins; ours then changes nothing.
    await tx.query('insert into kernel_runners (id, registered_at, client, seen_at) values ($1, $2, $3, $2) on conflict (id) do update set seen_at = excluded.seen_at', [runnerId, at, client]);
  }

  /** The client's other runners' schemas and the new ones together, within its quotas. */
  async function checkToolQuota(tx: SqlQueryable, runnerId: string, client: string, tools: readonly ToolSchemaInput[]): Promise<void> {
    await lockClientQuota(tx, 'tools', client);
    const [others] = await tx.query<{ n: number; bytes: number | string }>(
      `select count(*)::integer as n, coalesce(sum(${STORED_BYTES}), 0)::bigint as bytes from kernel_runner_tools t join kernel_runners r on r.id = t.runner_id where r.client = $1 and t.runner_id <> $2`,
      [client, runnerId],
    );
    const count = (others?.n ?? 0) + tools.length;
    if (count > limits.maxToolsPerClient) {
      throw quotaExceeded('maxToolsPerClient', client, `would have ${count} published tools across its runners, over the ${limits.maxToolsPerClient} it may have`, "withdraw tools from its other runners (publish fewer, or unregister them) or publish fewer here");
    }
    const bytes = Number(others?.bytes ?? 0) + tools.reduce((sum, t) => sum + storedBytes(t), 0);
    if (bytes > limits.maxToolBytesPerClient) {
      throw quotaExceeded('maxToolBytesPerClient', client, `would have ${bytes} bytes of published tool schemas across its runners, over the ${limits.maxToolBytesPerClient} it may have`, 'publish shorter descriptions and schemas, or withdraw tools from its other runners');
    }
  }

  return {
    async record(runnerId, client) {
      await db.transaction((tx) => recordIn(tx, runnerId, client, now().toISOString()));
    },

    async ownerOf(runnerId) {
      return (await db.query<{ client: string }>('select client from kernel_runners where id = $1', [runnerId]))[0]?.client;
    },

    async publish(runnerId, client, tools) {
      const at = now().toISOString();
      await db.transaction(async (tx) => {
        // The runner's row, locked: two publishes of one runner replace its schemas one after the other.
        await recordIn(tx, runnerId, client, at);
        await checkToolQuota(tx, runnerId, client, tools);
        await tx.query('delete from kernel_runner_tools where runner_id = $1', [runnerId]);
        for (let start = 0; start < tools.length; start += ROWS_PER_STATEMENT) {
          const values: SqlValue[] = [];
          const rows = tools.slice(start, start + ROWS_PER_STATEMENT).map((t) => {
            const n = values.push(runnerId, t.id, t.description, t.inputSchema === null ? null : JSON.stringify(t.inputSchema), at);
            return `($${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n})`;
          });
          await tx.query(`insert into kernel_runner_tools (runner_id, tool_id, description, input_schema, registered_at) values ${rows.join(', ')}`, values);
        }
      });
    },

    async toolsOf(runnerId) {
      return (await db.query<{ tool_id: string }>('select tool_id from kernel_runner_tools where runner_id = $1', [runnerId])).map((r) => r.tool_id);
    },

    async list({ prefix, after, limit } = {}) {
      const params: SqlValue[] = [];
      const param = (value: SqlValue): string => `$${params.push(value)}`;
      const where: string[] = [];
      if (prefix !== undefined && prefix !== '') where.push(`(tool_id = ${param(prefix)} or starts_with(tool_id, ${param(`${prefix}_`)}))`);
      if (after !== undefined && after !== '') where.push(`tool_id collate "C" > ${param(after)}`);
      const max = Math.max(1, Math.min(limit ?? TOOLS_PAGE_MAX, TOOLS_PAGE_MAX));
      // By id in byte order, whatever the database's collation; the page ends at `max` tools or
      // before the tool that would take the schemas on it past TOOLS_PAGE_MAX_BYTES (a first tool
      // goes alone), so that an answer stays small however much was published.
      const rows = await db.query<ToolRow>(
        `select * from (
           select *, sum(${STORED_BYTES}) over (order by tool_id collate "C") as running_bytes, count(*) over () as total
           from (select distinct on (tool_id) runner_id, tool_id, description, input_schema, registered_at from kernel_runner_tools ${where.length === 0 ? '' : `where ${where.join(' and ')}`} order by tool_id, seq desc) newest
         ) weighed
         where running_bytes - (${STORED_BYTES}) < ${param(TOOLS_PAGE_MAX_BYTES)}
         order by tool_id collate "C" limit ${param(max)}`,
        params,
      );
      const page = rows.filter((r, i) => i === 0 || Number(r.running_bytes) <= TOOLS_PAGE_MAX_BYTES);
      const more = Number(rows[0]?.total ?? 0) > page.length;
      return {
        tools: page.map((r) => ({
          id: r.tool_id,
          description: r.description,
          inputSchema: r.input_schema === null ? null : (JSON.parse(r.input_schema) as Record<string, unknown>),
          runnerId: r.runner_id,
          registeredAt: r.registered_at,
        })),
        ...(more ? { next: (page.at(-1) as ToolRow).tool_id } : {}),
      };
    },

    async forget(runnerId) {
      await db.transaction(async (tx) => {
        await tx.query('delete from kernel_runner_tools where runner_id = $1', [runnerId]);
        await tx.query('update kernel_runners set seen_at = $2 where id = $1', [runnerId, now().toISOString()]);
      });
    },

    async unregister(runnerId) {
      return (await db.query('delete from kernel_runners where id = $1 returning id', [runnerId])).length > 0;
    },
  };
}

/** As STORED_BYTES measures it in the database. */
function storedBytes(t: ToolSchemaInput): number {
  return Buffer.byteLength(t.id, 'utf8') + Buffer.byteLength(t.description, 'utf8') + (t.inputSchema === null ? 0 : Buffer.byteLength(JSON.stringify(t.inputSchema), 'utf8'));
}

/** The body of POST /v0/runners/{id}/tools: `{"tools": [{"id", "description"?, "input_schema"?}]}`, checked and capped. */
export function readToolSchemas(body: Record<string, unknown>): ToolSchemaInput[] {
  const tools = body['tools'];
  if (!Array.isArray(tools)) throw invalid('tools is required: a list of {"id", "description", "input_schema"} (an empty list withdraws them all)');
  if (tools.length > MAX_TOOLS_PER_RUNNER) throw invalid(`tools has ${tools.length} entries; a runner may publish at most ${MAX_TOOLS_PER_RUNNER}`);
  const seen = new Set<string>();
  return tools.map((tool: unknown, i) => {
    const at = `tools[${i}]`;
    if (typeof tool !== 'object' || tool === null || Array.isArray(tool)) throw invalid(`${at} must be an object {"id", "description", "input_schema"}`);
    const t = tool as Record<string, unknown>;
    const id = t['id'];
    if (typeof id !== 'string' || id === '') throw invalid(`${at}.id is required: the exact tool id agents invoke`);
    if (id.length > MAX_TOOL_ID_CHARS) throw invalid(`${at}.id is longer than ${MAX_TOOL_ID_CHARS} characters`);
    if (/[\u0000-\u001f\u007f]/.test(id)) throw invalid(`${at}.id contains a control character`);
    if (seen.has(id)) throw invalid(`${at}.id ${JSON.stringify(id)} appears twice; publish each tool once`);
    seen.add(id);
    const description = t['description'] ?? '';
    if (typeof description !== 'string') throw invalid(`${at}.description must be a string`);
    if (description.length > MAX_DESCRIPTION_CHARS) throw invalid(`${at}.description is longer than ${MAX_DESCRIPTION_CHARS} characters`);
    const schema = t['input_schema'] ?? null;
    if (schema !== null && (typeof schema !== 'object' || Array.isArray(schema))) throw invalid(`${at}.input_schema must be a JSON Schema object, such as {"type": "object"}`);
    if (schema !== null && Buffer.byteLength(JSON.stringify(schema), 'utf8') > MAX_INPUT_SCHEMA_BYTES) throw invalid(`${at}.input_schema is larger than ${MAX_INPUT_SCHEMA_BYTES / 1024} KiB as JSON`);
    return { id, description, inputSchema: schema as Record<string, unknown> | null };
  });
}

function invalid(message: string): KiwiError {
  return new KiwiError('INVALID_INPUT', message);
}
