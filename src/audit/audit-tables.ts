import type { Migration } from '../store/sql/migrate.js';

/**
 * The tables sql-audit-log.ts reads and writes, kept beside it. The kernel's list
 * (kernel/kernel-migrations.ts) applies them in version order with the rest of the schema, so one
 * database holds every table gateways share.
 */
export const AUDIT_TABLES: Migration = {
  version: 14,
  name: 'audit records shared by gateways',
  statements: [
    // Each call's audit record (audit/sql-audit-log.ts): the JSON line the files would hold,
    // with what readers filter on in columns. \`session\` is the gateway process that wrote it.
    `create table audit_records (
      id bigint generated always as identity primary key,
      at timestamptz not null,
      session text not null,
      client text,
      tool text not null,
      decision text not null,
      trace_id text,
      line text not null
    )`,
    'create index audit_records_session on audit_records (session, id)',
    'create index audit_records_client on audit_records (client, id)',
    'create index audit_records_at on audit_records (at)',
  ],
};
