/**
 * Client API keys, kept in `.ai/state/keys.json` (mode 0600), or in Postgres when gateways share
 * one (sql-key-store.ts): only a SHA-256 of each key is stored, so the store lets nobody in. A
 * key is `kiwi_<id>_<secret>` with 256 random bits of secret: a plain hash is enough for keys
 * that cannot be guessed (a slow password hash only helps against human-chosen secrets). Writers
 * replace the file whole (temp file + rename), so a reader never sees half a file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { describeError, KiwiError } from '../base/errors.js';
import { ROLES, type Role } from '../policy/caller.js';
import { LOCAL_CLIENT } from './access.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { replaceFile } from '../base/replace-file.js';

export interface KeyRecord {
  /** Short public id (`key_…`): what `kiwi keys list` shows and `revoke` takes. */
  id: string;
  /** The client the key belongs to; rate limits, loop detection and the audit key on it. */
  client: string;
  /** `sha256:<hex>` of the whole key. */
  hash: string;
  created: string;
  revoked?: string;
  /** A policy file (relative to the project root) that narrows what this client may do. */
  policy?: string;
  /** What the key may do (clients/access.ts); absent in files older than roles: `client` alone. */
  roles?: Role[];
  /** The agent ids an `agent` key serves. */
  agents?: string[];
  /** The tool ids a `runner` key serves. */
  tools?: string[];
}

/** What a key is made with besides its client. */
export interface KeyGrants {
  roles?: Role[];
  agents?: string[];
  tools?: string[];
}

export interface KeyFile {
  version: 1;
  keys: KeyRecord[];
}

/** Where the keys are: a file (below) or a database table (sql-key-store.ts). */
export interface KeyStore {
  /** For people: the file's path, or the database. */
  readonly where: string;
  read(): Promise<KeyFile>;
  /** Changes whenever the keys do; cheap, for a gateway that looks every second. */
  stamp(): Promise<string>;
  /**
   * How often a key the gateway does not know may make it look at the store again (client-auth.ts);
   * absent, 250 ms: a flood of wrong keys must not become a flood of reads of a shared store.
   */
  readonly missRecheckMs?: number;
  create(client: string, options?: KeyGrants & { policy?: string; now?: Date }): Promise<CreatedKey>;
  revoke(idOrClient: string, now?: Date): Promise<KeyRecord[]>;
}

export function fileKeyStore(file: string): KeyStore {
  return {
    where: file,
    read: () => readKeyFile(file),
    stamp: () => fileStamp(file),
    // Looking is one stat of the file (read only if it changed): every unknown key may look at once.
    missRecheckMs: 0,
    create: (client, options) => createKey(file, client, options),
    revoke: (idOrClient, now) => revokeKeys(file, idOrClient, now),
  };
}

async function fileStamp(file: string): Promise<string> {
  try {
    const info = await stat(file);
    return `${info.mtimeMs}:${info.size}:${info.ino}`;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : `error:${describeError(error)}`;
  }
}

export const KEY_FILE = path.join('.ai', 'state', 'keys.json');
export const CLIENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_FILE_BYTES = 1024 * 1024;
/** An agent or tool id a key names: the exact id, or a prefix ending in `*` (`*` alone is any). */
const SCOPE_NAME = /^[^\u0000-\u001f\u007f*]{0,255}\*?$/u;
const MAX_SCOPE_NAMES = 256;

const scopeList = z.array(z.string().min(1).max(256).regex(SCOPE_NAME)).min(1).max(MAX_SCOPE_NAMES);

const recordSchema = z.strictObject({
  id: z.string().regex(/^key_[a-f0-9]{8}$/),
  client: z.string().regex(CLIENT_NAME),
  hash: z.string().regex(/^sha256:[a-f0-9]{64}$/),
  created: z.string().max(64),
  revoked: z.string().max(64).optional(),
  policy: z.string().min(1).max(4096).optional(),
  roles: z.array(z.enum(ROLES)).min(1).max(ROLES.length).optional(),
  agents: scopeList.optional(),
  tools: scopeList.optional(),
});
const fileSchema = z.strictObject({ version: z.literal(1), keys: z.array(recordSchema).max(10_000) });

export function hashKey(key: string): string {
  return `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/** Reads the key file; a missing file is an empty store. Throws INVALID_INPUT naming the file and the fix. */
export async function readKeyFile(file: string): Promise<KeyFile> {
  let text: string;
  try {
    const tooLarge = (size: number) => new KiwiError('INVALID_INPUT', `${file} is ${size} bytes, more than the ${MAX_FILE_BYTES} a key file may hold; it is not a Kiwi key file`);
    text = (await readCappedFile(file, MAX_FILE_BYTES, tooLarge)).toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, keys: [] };
    if (error instanceof KiwiError) throw error;
    throw new KiwiError('INVALID_INPUT', `${file} cannot be read (${(error as Error).message}); check its permissions`, { cause: error });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new KiwiError('INVALID_INPUT', `${file} is not valid JSON; restore it from a backup, or delete it and create new keys with \`kiwi keys create\``);
  }
  const parsed = fileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KiwiError('INVALID_INPUT', `${file}: ${issue?.path.join('.') || '(top level)'} ${issue?.message ?? 'is invalid'}; the file is written by \`kiwi keys\`, do not edit it by hand`);
  }
  const ids = new Set<string>();
  for (const record of parsed.data.keys) {
    if (ids.has(record.id)) throw new KiwiError('INVALID_INPUT', `${file}: key id ${record.id} appears twice; the file is written by \`kiwi keys\`, do not edit it by hand`);
    ids.add(record.id);
  }
  return parsed.data as KeyFile;
}

async function writeKeyFile(file: string, data: KeyFile): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await replaceFile(file, `${JSON.stringify(data, null, 2)}\n`, 0o600);
}

export interface CreatedKey {
  record: KeyRecord;
  /** The key itself: shown once, never stored. */
  key: string;
}

export async function createKey(file: string, client: string, options: KeyGrants & { policy?: string; now?: Date } = {}): Promise<CreatedKey> {
  const data = await readKeyFile(file);
  const made = newKey(client, options, (id) => data.keys.some((k) => k.id === id));
  await writeKeyFile(file, { version: 1, keys: [...data.keys, made.record] });
  return made;
}

/** A new key for `client`, its name and grants checked, with an id `taken` says is free. */
export function newKey(client: string, options: KeyGrants & { policy?: string; now?: Date }, taken: (id: string) => boolean): CreatedKey {
  if (!CLIENT_NAME.test(client)) throw new KiwiError('INVALID_INPUT', `client name ${JSON.stringify(client.slice(0, 80))} is not valid: use 1 to 64 letters, digits, "_", "." or "-" (e.g. ci-bot)`);
  if (client === LOCAL_CLIENT) throw new KiwiError('INVALID_INPUT', `"${LOCAL_CLIENT}" is the name of the keyless local operator; give the client another name`);
  const grants = checkGrants(options);
  let id: string;
  do id = randomBytes(4).toString('hex');
  while (taken(`key_${id}`));
  const key = `kiwi_${id}_${randomBytes(32).toString('base64url')}`;
  const record: KeyRecord = { id: `key_${id}`, client, hash: hashKey(key), created: (options.now ?? new Date()).toISOString(), ...(options.policy ? { policy: options.policy } : {}), ...grants };
  return { record, key };
}

/**
 * The roles and scopes a new key gets, checked: an `agent` key names its agent ids and a `runner`
 * key its tools (nothing is served by default), and a scope belongs to its role.
 */
function checkGrants(options: KeyGrants): Required<Pick<KeyGrants, 'roles'>> & KeyGrants {
  const roles: Role[] = [...new Set<Role>(options.roles ?? ['client'])];
  for (const role of roles) if (!(ROLES as readonly string[]).includes(role)) throw new KiwiError('INVALID_INPUT', `unknown role ${JSON.stringify(String(role).slice(0, 40))}: use ${ROLES.join(', ')}`);
  const scope = (names: string[] | undefined, role: Role, flag: string, what: string): string[] | undefined => {
    if (names === undefined || names.length === 0) {
      if (roles.includes(role)) throw new KiwiError('INVALID_INPUT', `a key with the ${role} role must name the ${what} it serves (${flag} NAME, repeatable; a prefix ending in * covers many)`);
      return undefined;
    }
    if (!roles.includes(role)) throw new KiwiError('INVALID_INPUT', `${flag} goes with the ${role} role (--role ${role})`);
    if (names.length > MAX_SCOPE_NAMES) throw new KiwiError('INVALID_INPUT', `a key may name at most ${MAX_SCOPE_NAMES} ${what}`);
    for (const name of names) {
      if (name === '' || name.length > 256 || !SCOPE_NAME.test(name)) throw new KiwiError('INVALID_INPUT', `${flag} ${JSON.stringify(name.slice(0, 80))} is not valid: an exact id, or a prefix ending in * (no other *, no control characters, at most 256 characters)`);
    }
    return [...new Set(names)];
  };
  const agents = scope(options.agents, 'agent', '--agent', 'agent ids');
  const tools = scope(options.tools, 'runner', '--tool', 'tool ids');
  return { roles, ...(agents === undefined ? {} : { agents }), ...(tools === undefined ? {} : { tools }) };
}

/** Revokes a key by id, or every key of a client by its name. Returns the records it revoked (none when all already were). */
export async function revokeKeys(file: string, idOrClient: string, now = new Date()): Promise<KeyRecord[]> {
  const data = await readKeyFile(file);
  const matches = data.keys.filter((k) => k.id === idOrClient || k.client === idOrClient);
  if (matches.length === 0) throw noSuchKey(idOrClient);
  const revoked: KeyRecord[] = [];
  const keys = data.keys.map((k) => {
    if (!matches.includes(k) || k.revoked !== undefined) return k;
    const next = { ...k, revoked: now.toISOString() };
    revoked.push(next);
    return next;
  });
  if (revoked.length > 0) await writeKeyFile(file, { version: 1, keys });
  return revoked;
}

export function noSuchKey(idOrClient: string): KiwiError {
  return new KiwiError('INVALID_INPUT', `no key or client named ${JSON.stringify(idOrClient.slice(0, 80))}; \`kiwi keys list\` shows the key ids and clients`);
}

/** A stored record read back: checked as the file's records are. */
export function parseKeyRecord(data: unknown, where: string): KeyRecord {
  const parsed = recordSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KiwiError('INVALID_INPUT', `${where}: ${issue?.path.join('.') || '(top level)'} ${issue?.message ?? 'is invalid'}; keys are written by \`kiwi keys\`, do not edit them by hand`);
  }
  return parsed.data as KeyRecord;
}
