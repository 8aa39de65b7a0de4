import type { Hono } from 'hono';
import type { CreatedKey, KeyGrants, KeyRecord } from '../../clients/key-store.js';
import { KiwiError } from '../../base/errors.js';
import type { Role } from '../../policy/caller.js';
import { ADMIN_MAX_BODY_BYTES, ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import { readId, readObject } from '../server/json-api.js';

/**
 * Keys in the admin API: list (never a hash), create with roles, scopes and a policy file (the
 * key itself is in the answer, once), revoke by key id. The same store and checks as `kiwi keys`.
 */

export interface AdminKeys {
  /** Where they are kept, for people: the file or the database. */
  where: string;
  list(): Promise<KeyRecord[]>;
  /** `policy`: a path relative to the project root, checked (clientPolicyFile) before the key is made. */
  create(client: string, grants: KeyGrants & { policy?: string }): Promise<CreatedKey>;
  /** Revokes one key by id; none when it already was. */
  revoke(id: string): Promise<KeyRecord[]>;
}

const MAX_LIST = 64;

export function mountAdminKeys(app: Hono, route: AdminRoute, keys: AdminKeys): void {
  app.get(
    `${ADMIN_PREFIX}/keys`,
    route('keys', async (c) => c.json({ where: keys.where, keys: (await keys.list()).map(shownKey) })),
  );

  app.post(
    `${ADMIN_PREFIX}/keys`,
    route('keys', async (c) => {
      const body = await readObject(c, ADMIN_MAX_BODY_BYTES);
      const client = body['client'];
      if (typeof client !== 'string' || client === '') throw new KiwiError('INVALID_INPUT', 'client is required: the name of the client the key is for, e.g. "ci-bot"');
      const policy = body['policy'];
      if (policy !== undefined && (typeof policy !== 'string' || policy === '')) throw new KiwiError('INVALID_INPUT', 'policy must be the path of a policy file in the project, e.g. ".ai/config/clients/ci-bot.yaml"');
      const roles = stringList(body, 'roles') as Role[] | undefined;
      const agents = stringList(body, 'agents');
      const tools = stringList(body, 'tools');
      const made = await keys.create(client, { ...(roles ? { roles } : {}), ...(agents ? { agents } : {}), ...(tools ? { tools } : {}), ...(policy === undefined ? {} : { policy }) });
      return c.json({ key: made.key, record: shownKey(made.record), note: 'the key is shown once: only its hash is kept' }, 201);
    }),
  );

  app.delete(
    `${ADMIN_PREFIX}/keys/:id`,
    route('keys', async (c) => {
      const revoked = await keys.revoke(readKeyId(c.req.param('id')));
      return c.json({ revoked: revoked.map(shownKey) });
    }),
  );
}

/** A key id from the path: checked, so that a client's name or anything else is a 400 and not a lookup. */
export function readKeyId(value: string | undefined): string {
  const id = readId(value, 'key id');
  if (!id.startsWith('key_')) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(id.slice(0, 80))} is not a key id; key ids start with key_ (GET ${ADMIN_PREFIX}/keys lists them)`);
  return id;
}

/** A record as the API shows it: everything but the hash. */
export function shownKey({ hash: _hash, ...rest }: KeyRecord): Omit<KeyRecord, 'hash'> {
  return rest;
}

/** An optional list of strings from the body, bounded. */
function stringList(body: Record<string, unknown>, field: string): string[] | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw new KiwiError('INVALID_INPUT', `${field} must be a list of strings`);
  if (value.length > MAX_LIST) throw new KiwiError('INVALID_INPUT', `${field} may hold at most ${MAX_LIST} names`);
  return value as string[];
}
