import type { Migration } from '../store/sql/migrate.js';

/**
 * The tables sql-key-store.ts reads and writes, kept beside it. The kernel's list
 * (kernel/kernel-migrations.ts) applies them in version order with the rest of the schema, so one
 * database holds every table gateways share.
 */
export const KEY_TABLES: Migration = {
  version: 13,
  name: 'client keys shared by gateways',
  statements: [
    // A key's record as the key file holds it (clients/key-store.ts), its hash, never the key
    // (clients/sql-key-store.ts); every create and revoke takes the next version, so gateways
    // see a change even when two come within one millisecond.
    'create sequence client_keys_version',
    `create table client_keys (
      id text primary key,
      client text not null,
      hash text not null unique,
      record text not null,
      version bigint not null default nextval('client_keys_version')
    )`,
    'create index client_keys_client on client_keys (client)',
  ],
};
