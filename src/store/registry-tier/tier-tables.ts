import type { Migration } from '../sql/migrate.js';

/**
 * The tables sql-registry-tier.ts reads and writes, kept beside it. The kernel's list
 * (kernel/kernel-migrations.ts) applies them in version order with the rest of the schema, so one
 * database holds every table gateways share.
 */
export const REGISTRY_TIER_TABLES: Migration = {
  version: 16,
  name: 'the registry tier: items, their versions and files',
  statements: [
    // The database tier of the registry (store/registry-tier/). An id is one item whatever its
    // type, so `kiwi registry pull ID` never has to ask which; `latest_version` is the highest.
    `create table tools (
      id text primary key,
      type text not null check (type in ('tool', 'directive', 'knowledge')),
      latest_version text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`,
    // Every version ever pushed, never changed (the trigger below): pulling 1.2.0 gives the same bytes forever.
    `create table tool_versions (
      tool_id text not null references tools (id),
      version text not null,
      folder text not null,
      manifest text not null,
      digest text not null,
      signature text,
      pushed_by text not null,
      pushed_at timestamptz not null,
      primary key (tool_id, version)
    )`,
    // UTF-8 text as text; anything else (or text with NUL, which Postgres text cannot hold) as base64.
    `create table tool_version_files (
      tool_id text not null,
      version text not null,
      path text not null,
      encoding text not null check (encoding in ('utf8', 'base64')),
      content text not null,
      size integer not null,
      digest text not null,
      primary key (tool_id, version, path),
      foreign key (tool_id, version) references tool_versions (tool_id, version)
    )`,
    `create function registry_version_immutable() returns trigger language plpgsql as $$
    begin
      raise exception 'registry versions are immutable: push a new version instead of changing %', old.tool_id;
    end
    $$`,
    'create trigger tool_versions_immutable before update or delete on tool_versions for each row execute function registry_version_immutable()',
    'create trigger tool_version_files_immutable before update or delete on tool_version_files for each row execute function registry_version_immutable()',
  ],
};
