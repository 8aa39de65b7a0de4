import { KiwiError } from '../errors.js';
import type { SqlDb, SqlValue } from '../store/sql/sql-db.js';

/**
 * Runners and the tool schemas they publish (§7.5, §7.6), in the database so that every gateway
 * on it lists the same tools. A publish replaces all of that runner's schemas; a tool id
 * published by several runners is listed once, from the newest publish.
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

export interface ToolSchemas {
  /** Stores the runner's record, if new, as `client`'s. */
  record(runnerId: string, client: string): Promise<void>;
  /** The client whose runner it is; undefined for a runner never heard of. */
  ownerOf(runnerId: string): Promise<string | undefined>;
  /** Replaces the runner's schemas (its record stored too, as `client`'s if new). */
  publish(runnerId: string, client: string, tools: readonly ToolSchemaInput[]): Promise<void>;
  /** The tool ids the runner published. */
  toolsOf(runnerId: string): Promise<string[]>;
  /** Newest publisher per id, by id; `prefix` keeps `id == prefix` and ids that start with `prefix_`. */
  list(prefix?: string): Promise<PublishedTool[]>;
  /** Drops the runner's schemas, keeps its record. */
  forget(runnerId: string): Promise<void>;
  /** Drops the runner's record and schemas; false when it had no record. */
  unregister(runnerId: string): Promise<boolean>;
}

const MAX_TOOLS_PER_RUNNER = 1000;
const MAX_TOOL_ID_CHARS = 256;
const MAX_DESCRIPTION_CHARS = 8192;
/** The input schema as JSON text. */
const MAX_INPUT_SCHEMA_BYTES = 64 * 1024;

// Postgres takes at most 65,535 parameters in one statement: 6 a row.
const ROWS_PER_STATEMENT = 1000;

interface ToolRow extends Record<string, unknown> {
  runner_id: string;
  tool_id: string;
  description: string;
  input_schema: string | null;
  registered_at: string;
}

export function createToolSchemas(db: SqlDb, now: () => Date): ToolSchemas {
  return {
    async record(runnerId, client) {
      await db.query('insert into kernel_runners (id, registered_at, client) values ($1, $2, $3) on conflict (id) do nothing', [runnerId, now().toISOString(), client]);
    },

    async ownerOf(runnerId) {
      return (await db.query<{ client: string }>('select client from kernel_runners where id = $1', [runnerId]))[0]?.client;
    },

    async publish(runnerId, client, tools) {
      const at = now().toISOString();
      await db.transaction(async (tx) => {
        // The runner's row, locked: two publishes of one runner replace its schemas one after the other.
        await tx.query('insert into kernel_runners (id, registered_at, client) values ($1, $2, $3) on conflict (id) do update set id = excluded.id', [runnerId, at, client]);
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

    async list(prefix) {
      const filter = prefix === undefined || prefix === '' ? '' : 'where tool_id = $1 or starts_with(tool_id, $2)';
      // By id in byte order, whatever the database's collation.
      const rows = await db.query<ToolRow>(
        `select * from (select distinct on (tool_id) runner_id, tool_id, description, input_schema, registered_at from kernel_runner_tools ${filter} order by tool_id, seq desc) newest order by tool_id collate "C"`,
        filter === '' ? [] : [prefix as string, `${prefix as string}_`],
      );
      return rows.map((r) => ({
        id: r.tool_id,
        description: r.description,
        inputSchema: r.input_schema === null ? null : (JSON.parse(r.input_schema) as Record<string, unknown>),
        runnerId: r.runner_id,
        registeredAt: r.registered_at,
      }));
    },

    async forget(runnerId) {
      await db.query('delete from kernel_runner_tools where runner_id = $1', [runnerId]);
    },

    async unregister(runnerId) {
      return (await db.query('delete from kernel_runners where id = $1 returning id', [runnerId])).length > 0;
    },
  };
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
