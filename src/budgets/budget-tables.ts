import type { Migration } from '../store/sql/migrate.js';

/**
 * The tables sql-budget-ledger.ts reads and writes, kept beside it. The kernel's list
 * (kernel/kernel-migrations.ts) applies them in version order with the rest of the schema, so one
 * database holds every table gateways share.
 */
export const BUDGET_TABLES: Migration = {
  version: 12,
  name: 'budget usage shared by gateways',
  statements: [
    // What each client (and directive run) used, one row per upstream turn, tool call or spawn
    // (budgets/sql-budget-ledger.ts): gateways on one server count each other's charges.
    `create table budget_usage (
      id bigint generated always as identity primary key,
      writer text not null,
      at bigint not null,
      client text not null,
      model text,
      input bigint not null,
      output bigint not null,
      usd double precision,
      tool_calls integer not null,
      spawns integer not null,
      turns integer not null,
      directive text,
      run text,
      estimated boolean not null
    )`,
    'create index budget_usage_client on budget_usage (client, at)',
    'create index budget_usage_run on budget_usage (run, at) where run is not null',
    'create index budget_usage_at on budget_usage (at)',
  ],
};
