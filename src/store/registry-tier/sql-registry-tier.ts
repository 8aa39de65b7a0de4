import { z } from 'zod';
import { KiwiError } from '../../base/errors.js';
import { compareVersions } from '../../registry/directive-version.js';
import type { SqlDb, SqlQueryable } from '../sql/sql-db.js';
import { checkVersion, fileDigest, ITEM_TYPES, itemId, itemVersion, relativePath, versionDigest, type ItemType, type NewVersion, type TierFile, type TierVersion } from './tier-version.js';

/**
 * The database tier of the registry in the gateway's SQL database (tables `tools`,
 * `tool_versions`, `tool_version_files`, kernel migration 16): every version of every item is
 * kept, and a version once written never changes. A push of a version that exists is fine when
 * its content is the same (nothing is written) and refused when it differs.
 */

export type PushOutcome =
  | { status: 'added'; latest: string }
  | { status: 'unchanged'; latest: string }
  | { status: 'conflict'; message: string };

export interface TierItem {
  id: string;
  type: ItemType;
  latest: string;
  versions: number;
  updatedAt: string;
}

export type VersionSummary = Omit<TierVersion, 'files'> & { files: Array<{ path: string; size: number; digest: string }> };

export interface RegistryTier {
  /** Where the tier is, for messages. */
  readonly where: string;
  /**
   * `ownedBy`: the version is refused unless the item is new or its first version was pushed by
   * this client (an agent's creation belongs to its client; an admin pushes without it).
   */
  push(version: NewVersion, pushedBy: string, options?: { ownedBy?: string }): Promise<PushOutcome>;
  list(): Promise<TierItem[]>;
  /** The bytes of every version `client` pushed of items agents created (in a `created/` folder): what its quota counts. */
  createdBytes(client: string): Promise<number>;
  /** Every version of one item, highest first; empty when there is no such item. */
  versions(id: string): Promise<VersionSummary[]>;
  /** One version with its files: `version`, or the latest; undefined when there is none. */
  get(id: string, version?: string): Promise<TierVersion | undefined>;
  /** The versions `pins` names (id → version), with files; a pin of a version the tier lacks is left out. */
  pinned(pins: Readonly<Record<string, string>>): Promise<TierVersion[]>;
}

const itemRow = z.object({ id: itemId, type: z.enum(ITEM_TYPES), latest_version: itemVersion, versions: z.coerce.number(), updated_at: z.coerce.date() });
const versionRow = z.object({
  tool_id: itemId,
  type: z.enum(ITEM_TYPES),
  version: itemVersion,
  folder: relativePath,
  manifest: relativePath,
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  signature: z.string().nullable(),
  pushed_by: z.string(),
  pushed_at: z.coerce.date(),
  owner: z.string(),
});
const fileRow = z.object({ tool_id: z.string(), version: z.string(), path: relativePath, encoding: z.enum(['utf8', 'base64']), content: z.string(), size: z.coerce.number(), digest: z.string() });
type VersionRow = z.infer<typeof versionRow>;
type FileRow = z.infer<typeof fileRow>;

/** `owner`: who pushed the item's first version. */
const OWNER = '(select f.pushed_by from tool_versions f where f.tool_id = v.tool_id order by f.pushed_at, f.version limit 1) as owner';
const VERSION_COLUMNS = `v.tool_id, t.type, v.version, v.folder, v.manifest, v.digest, v.signature, v.pushed_by, v.pushed_at, ${OWNER}`;

export function sqlRegistryTier(db: SqlDb, where: string): RegistryTier {
  return {
    where,
    push: (version, pushedBy, options = {}) => db.transaction((tx) => pushVersion(tx, checkVersion(version), pushedBy, options.ownedBy)),
    async list() {
      const rows = await db.query('select t.id, t.type, t.latest_version, t.updated_at, (select count(*) from tool_versions v where v.tool_id = t.id) as versions from tools t order by t.id');
      return rows.map((r) => {
        const row = parseRow(itemRow, r, where);
        return { id: row.id, type: row.type, latest: row.latest_version, versions: row.versions, updatedAt: row.updated_at.toISOString() };
      });
    },
    async createdBytes(client) {
      const [row] = await db.query<{ bytes: string | number | null }>(
        `select coalesce(sum(f.size), 0) as bytes from tool_version_files f join tool_versions v using (tool_id, version)
         where v.pushed_by = $1 and v.folder ~ '^(tools|directives|knowledge)/created(/|$)'`,
        [client],
      );
      return Number(row?.bytes ?? 0);
    },
    async versions(id) {
      const rows = (await db.query(`select ${VERSION_COLUMNS} from tool_versions v join tools t on t.id = v.tool_id where v.tool_id = $1`, [id])).map((r) => parseRow(versionRow, r, where));
      const files = await filesOf(db, rows, where);
      return rows
        .map((row) => ({ ...fromRow(row), files: (files.get(`${row.tool_id}@${row.version}`) ?? []).map(({ path, size, digest }) => ({ path, size, digest })) }))
        .sort((a, b) => compareVersions(b.version, a.version) ?? 0);
    },
    async get(id, version) {
      const rows = await db.query(`select ${VERSION_COLUMNS} from tool_versions v join tools t on t.id = v.tool_id where v.tool_id = $1 and v.version = coalesce($2, t.latest_version)`, [id, version ?? null]);
      const [found] = await withFiles(db, rows.map((r) => parseRow(versionRow, r, where)), where);
      return found;
    },
    async pinned(pins) {
      const rows = await db.query(
        `select ${VERSION_COLUMNS} from json_each_text($1::json) p
         join tools t on t.id = p.key
         join tool_versions v on v.tool_id = t.id and v.version = p.value
         order by t.id`,
        [JSON.stringify(pins)],
      );
      return withFiles(db, rows.map((r) => parseRow(versionRow, r, where)), where);
    },
  };
}

async function pushVersion(tx: SqlQueryable, v: NewVersion, pushedBy: string, ownedBy: string | undefined): Promise<PushOutcome> {
  const now = new Date().toISOString();
  await tx.query('insert into tools (id, type, latest_version, created_at, updated_at) values ($1, $2, $3, $4, $4) on conflict (id) do nothing', [v.id, v.type, v.version, now]);
  // Held to the end of the transaction: two pushes of one item take turns, so `latest` is never lost.
  const [item] = await tx.query<{ type: string; latest_version: string }>('select type, latest_version from tools where id = $1 for update', [v.id]);
  if (item === undefined) throw new KiwiError('INTERNAL', `registry item ${v.id} vanished while it was pushed`);
  if (item.type !== v.type) {
    return { status: 'conflict', message: `${JSON.stringify(v.id)} is a ${item.type} in the registry, not a ${v.type}; ids are unique across tools, directives and knowledge — rename one` };
  }
  if (ownedBy !== undefined) {
    const [first] = await tx.query<{ pushed_by: string }>('select pushed_by from tool_versions where tool_id = $1 order by pushed_at, version limit 1', [v.id]);
    if (first !== undefined && first.pushed_by !== ownedBy) {
      return { status: 'conflict', message: `${v.type} ${v.id} in the registry belongs to client ${first.pushed_by}, whose agent created it; only that client or an admin adds versions — choose another id` };
    }
  }
  const digest = versionDigest(v);
  const [existing] = await tx.query<{ digest: string }>('select digest from tool_versions where tool_id = $1 and version = $2', [v.id, v.version]);
  if (existing !== undefined) {
    if (existing.digest === digest) return { status: 'unchanged', latest: item.latest_version };
    return {
      status: 'conflict',
      message: `${v.type} ${v.id}@${v.version} is already in the registry with different content, and versions never change; raise its version (e.g. ${nextPatch(v.version)}) and push again`,
    };
  }
  await tx.query('insert into tool_versions (tool_id, version, folder, manifest, digest, signature, pushed_by, pushed_at) values ($1, $2, $3, $4, $5, $6, $7, $8)', [
    v.id, v.version, v.folder, v.manifest, digest, v.signature, pushedBy, now,
  ]);
  for (const file of v.files) {
    const { encoding, content } = encode(file.bytes);
    await tx.query('insert into tool_version_files (tool_id, version, path, encoding, content, size, digest) values ($1, $2, $3, $4, $5, $6, $7)', [
      v.id, v.version, file.path, encoding, content, file.bytes.length, file.digest,
    ]);
  }
  const latest = (compareVersions(v.version, item.latest_version) ?? 0) > 0 ? v.version : item.latest_version;
  await tx.query('update tools set latest_version = $2, updated_at = $3 where id = $1', [v.id, latest, now]);
  return { status: 'added', latest };
}

function nextPatch(version: string): string {
  const parts = version.split('.').map(Number);
  while (parts.length < 3) parts.push(0);
  parts[parts.length - 1] = (parts.at(-1) as number) + 1;
  return parts.join('.');
}

/**
 * Text that is valid UTF-8 stays readable in the database; everything else is base64, and so is
 * text with NUL (Postgres text cannot hold it) or a leading BOM (PGlite drops it on the way out).
 */
function encode(bytes: Buffer): { encoding: 'utf8' | 'base64'; content: string } {
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    if (!text.includes('\0') && !text.startsWith('\ufeff')) return { encoding: 'utf8', content: text };
  } catch {
    // not UTF-8: kept as base64 below
  }
  return { encoding: 'base64', content: bytes.toString('base64') };
}

async function filesOf(db: SqlQueryable, rows: VersionRow[], where: string): Promise<Map<string, FileRow[]>> {
  const byVersion = new Map<string, FileRow[]>();
  if (rows.length === 0) return byVersion;
  const wanted = JSON.stringify(rows.map((r) => ({ tool_id: r.tool_id, version: r.version })));
  const files = await db.query('select f.* from tool_version_files f join json_to_recordset($1::json) as w(tool_id text, version text) using (tool_id, version) order by f.tool_id, f.version, f.path', [wanted]);
  for (const raw of files) {
    const row = parseRow(fileRow, raw, where);
    const key = `${row.tool_id}@${row.version}`;
    byVersion.set(key, [...(byVersion.get(key) ?? []), row]);
  }
  return byVersion;
}

async function withFiles(db: SqlQueryable, rows: VersionRow[], where: string): Promise<TierVersion[]> {
  const files = await filesOf(db, rows, where);
  return rows.map((row) => {
    const version = { ...fromRow(row), files: (files.get(`${row.tool_id}@${row.version}`) ?? []).map((f) => decode(f, row, where)) };
    // What was stored is checked as a push is: a row changed behind the trigger's back is refused, not run.
    checkVersion(version);
    if (versionDigest(version) !== row.digest) throw damaged(where, row, 'its files do not match the version digest');
    return version;
  });
}

function decode(f: FileRow, row: VersionRow, where: string): TierFile {
  const bytes = f.encoding === 'utf8' ? Buffer.from(f.content, 'utf8') : Buffer.from(f.content, 'base64');
  if (bytes.length !== f.size || fileDigest(bytes) !== f.digest) throw damaged(where, row, `file ${f.path} does not match its digest`);
  return { path: f.path, bytes, digest: f.digest };
}

function fromRow(row: VersionRow): Omit<TierVersion, 'files'> {
  return {
    id: row.tool_id,
    type: row.type,
    version: row.version,
    folder: row.folder,
    manifest: row.manifest,
    signature: row.signature,
    digest: row.digest,
    pushedBy: row.pushed_by,
    pushedAt: row.pushed_at.toISOString(),
    owner: row.owner,
  };
}

function damaged(where: string, row: Pick<VersionRow, 'tool_id' | 'version'>, why: string): KiwiError {
  return new KiwiError('INTERNAL', `${where}: ${row.tool_id}@${row.version} is damaged (${why}); push it again under a new version`);
}

function parseRow<T>(schema: z.ZodType<T>, raw: unknown, where: string): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new KiwiError('INTERNAL', `${where}: a row of the registry tier is not valid (${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}); it was written by something other than kiwi`);
}
