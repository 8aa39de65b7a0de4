import type { SqlDb } from '../store/sql/sql-db.js';
import { newKey, noSuchKey, parseKeyRecord, type KeyRecord, type KeyStore } from './key-store.js';

/**
 * Client keys in Postgres (table `client_keys`, kernel migration 13), for gateways that share a
 * server (`DATABASE_URL`): a key made or revoked through any of them (`kiwi keys` with the same
 * DATABASE_URL) counts on all. As in the file, only each key's SHA-256 is stored. `stamp` is the
 * number of keys and the newest version, which every create and revoke moves.
 */
export function sqlKeyStore(db: SqlDb, where: string): KeyStore {
  const read = async (): Promise<KeyRecord[]> => {
    const rows = await db.query<{ record: string }>("select record from client_keys order by record::jsonb->>'created', id");
    return rows.map((r) => parseKeyRecord(JSON.parse(r.record), where));
  };
  return {
    where,
    read: async () => ({ version: 1, keys: await read() }),
    async stamp() {
      const [row] = await db.query<{ n: string | number; version: string | number | null }>('select count(*) as n, max(version) as version from client_keys');
      return `${row?.n ?? 0}:${row?.version ?? ''}`;
    },
    async create(client, options = {}) {
      // The id is the primary key: a clash (one in four billion) fails the insert rather than overwriting.
      const made = newKey(client, options, () => false);
      await db.query('insert into client_keys (id, client, hash, record) values ($1, $2, $3, $4)', [made.record.id, made.record.client, made.record.hash, JSON.stringify(made.record)]);
      return made;
    },
    async revoke(idOrClient, now = new Date()) {
      return db.transaction(async (tx) => {
        const rows = await tx.query<{ record: string }>('select record from client_keys where id = $1 or client = $1 for update', [idOrClient]);
        if (rows.length === 0) throw noSuchKey(idOrClient);
        const revoked: KeyRecord[] = [];
        for (const row of rows) {
          const record = parseKeyRecord(JSON.parse(row.record), where);
          if (record.revoked !== undefined) continue;
          const next = { ...record, revoked: now.toISOString() };
          await tx.query("update client_keys set record = $2, version = nextval('client_keys_version') where id = $1", [record.id, JSON.stringify(next)]);
          revoked.push(next);
        }
        return revoked;
      });
    },
  };
}
