import type { Migration } from '../store/sql/migrate.js';
import { AUDIT_TABLES } from '../audit/audit-tables.js';
import { BUDGET_TABLES } from '../budgets/budget-tables.js';
import { KEY_TABLES } from '../clients/key-tables.js';
import { REGISTRY_TIER_TABLES } from '../store/registry-tier/tier-tables.js';
import { CLIENT_SHARE_MIGRATION } from './client-share.js';

/**
 * The schema of the database gateways share, in version order: the kernel's tables here, the
 * budgets', keys', audit's and registry tier's beside the modules that use them. The threads'
 * tables stay here: threads sit above the kernel, which applies this list and may not reach up.
 * User JSON (input, labels, output, payloads) is kept as the text it was written as: `jsonb`
 * would reorder its keys, and the v0 API returns it as received. Times are RFC 3339 text in UTC
 * with milliseconds, which sorts as it reads.
 */
export const KERNEL_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'executions and their event log',
    statements: [
      `create table kernel_executions (
        id text primary key,
        agent_id text not null,
        status text not null check (status in ('pending', 'running', 'blocked', 'completed', 'failed', 'cancelled')),
        input text not null,
        labels text not null,
        output text,
        created_at text not null,
        updated_at text not null,
        last_sequence integer not null default 0
      )`,
      'create index kernel_executions_newest on kernel_executions (created_at desc, id desc)',
      'create index kernel_executions_agent on kernel_executions (agent_id, status)',
      // The labels again, one row each, for the list filter (§5).
      `create table kernel_execution_labels (
        execution_id text not null references kernel_executions (id) on delete cascade,
        key text not null,
        value text not null,
        primary key (execution_id, key)
      )`,
      'create index kernel_execution_labels_pair on kernel_execution_labels (key, value)',
      `create table kernel_events (
        execution_id text not null references kernel_executions (id) on delete cascade,
        sequence integer not null,
        id text not null unique,
        step_id text,
        type text not null,
        timestamp text not null,
        payload text not null,
        causation_id text not null,
        correlation_id text not null,
        primary key (execution_id, sequence)
      )`,
    ],
  },
  {
    version: 2,
    name: 'sessions of agents',
    statements: [
      // One live session per execution, bound to the agent connection it was assigned to (§10);
      // `owner` is the kernel instance holding that connection.
      `create table kernel_sessions (
        id text primary key,
        execution_id text not null unique references kernel_executions (id) on delete cascade,
        agent_id text not null,
        consumer_id text not null,
        owner text not null,
        created_at text not null
      )`,
      'create index kernel_sessions_owner on kernel_sessions (owner, agent_id, consumer_id)',
    ],
  },
  {
    version: 3,
    name: 'steps',
    statements: [
      // A tool call of an execution (§11): local ones the agent runs itself and reports,
      // remote ones go to runners. Arguments and results are the JSON text as written.
      `create table kernel_steps (
        id text primary key,
        execution_id text not null references kernel_executions (id) on delete cascade,
        tool_id text not null,
        arguments text not null,
        remote boolean not null,
        status text not null check (status in ('pending', 'dispatched', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled')),
        attempt integer not null,
        max_attempts integer not null,
        deadline text not null,
        result text,
        error text,
        created_at text not null,
        completed_at text
      )`,
      'create index kernel_steps_execution on kernel_steps (execution_id, created_at)',
    ],
  },
  {
    version: 4,
    name: 'signals and blocks',
    statements: [
      // Why a blocked execution waits (§12): 'signal' with the signal type, or 'approval' with the step.
      'alter table kernel_executions add column block_reason text',
      'alter table kernel_executions add column block_ref text',
      // A signal stays pending until a wait of its type consumes it, or the execution resets or ends.
      `create table kernel_signals (
        id text primary key,
        execution_id text not null references kernel_executions (id) on delete cascade,
        signal_type text not null,
        payload text not null,
        created_at text not null
      )`,
      'create index kernel_signals_pending on kernel_signals (execution_id, signal_type, created_at)',
    ],
  },
  {
    version: 5,
    name: 'jobs for runners',
    statements: [
      // One attempt of a remote step (§13): queued until an idle runner connection that can run
      // its tool takes it (skipping rows other gateways hold locked), then sent.
      `create table kernel_jobs (
        id text primary key,
        execution_id text not null references kernel_executions (id) on delete cascade,
        step_id text not null references kernel_steps (id) on delete cascade,
        attempt integer not null,
        tool_id text not null,
        arguments text not null,
        deadline text not null,
        not_before text not null,
        state text not null check (state in ('queued', 'sent')),
        runner_id text,
        consumer_id text,
        owner text,
        created_at text not null
      )`,
      "create index kernel_jobs_queue on kernel_jobs (state, not_before, created_at) where state = 'queued'",
    ],
  },
  {
    version: 6,
    name: 'chats of the gateway as executions',
    statements: [
      // 'chat': a chat request the gateway itself runs (chat-journal.ts). No agent is ever
      // assigned one, and a restart ends it instead of handing it to an agent.
      "alter table kernel_executions add column origin text not null default 'api' check (origin in ('api', 'chat'))",
    ],
  },
  {
    version: 7,
    name: 'runners and their tool schemas',
    statements: [
      // A runner the kernel has heard from (a stream, a publish), until DELETE /v0/runners/{id} (§7.6).
      `create table kernel_runners (
        id text primary key,
        registered_at text not null
      )`,
      // The tools a runner published (§7.5): JSON Schema as the JSON text it was sent as. `seq`
      // orders publishes, so the newest publisher of a tool id wins even within one millisecond.
      `create table kernel_runner_tools (
        runner_id text not null references kernel_runners (id) on delete cascade,
        tool_id text not null,
        description text not null,
        input_schema text,
        registered_at text not null,
        seq bigint generated always as identity,
        primary key (runner_id, tool_id)
      )`,
      'create index kernel_runner_tools_newest on kernel_runner_tools (tool_id, seq desc)',
      // GET /metrics counts the executions not yet ended on every scrape: over these rows only.
      "create index kernel_executions_active on kernel_executions (status) where status in ('pending', 'running', 'blocked')",
    ],
  },
  {
    version: 8,
    name: 'kernel instances',
    statements: [
      // Each instance on the database, with its last sign of life (instances.ts).
      `create table kernel_instances (
        id text primary key,
        started_at text not null,
        heartbeat_at text not null
      )`,
      // The instance running a chat: if it goes silent, another fails the chat.
      'alter table kernel_executions add column owner text',
    ],
  },
  {
    version: 9,
    name: 'owners',
    statements: [
      // The client of the key that made each object (clients/access.ts); 'local' for what the
      // keyless local operator made, and for everything made before owners were recorded.
      "alter table kernel_executions add column client text not null default 'local'",
      'create index kernel_executions_client on kernel_executions (client, created_at desc, id desc)',
      // The client whose agent connection holds the session: nobody else may act in it.
      "alter table kernel_sessions add column client text not null default 'local'",
      "alter table kernel_runners add column client text not null default 'local'",
      // The runner a remote step's current attempt was sent to: only it reports the step's result.
      'alter table kernel_steps add column runner_id text',
    ],
  },
  {
    version: 10,
    name: 'bounded kernel state',
    statements: [
      // The last time a runner had a stream or published (kernel-limits.ts): its schemas go when
      // it has been silent for a while, its record after the retention time.
      'alter table kernel_runners add column seen_at text',
      'update kernel_runners set seen_at = registered_at',
      'alter table kernel_runners alter column seen_at set not null',
      'create index kernel_runners_client on kernel_runners (client)',
      // A client's live executions, counted on every create against its quota.
      "create index kernel_executions_live_client on kernel_executions (client) where status in ('pending', 'running', 'blocked')",
      // Ended executions, oldest end first, for the retention sweep (updated_at is when it ended).
      "create index kernel_executions_ended on kernel_executions (updated_at) where status in ('completed', 'failed', 'cancelled')",
      // Deleting an execution cascades to its jobs, directly and through its steps.
      'create index kernel_jobs_execution on kernel_jobs (execution_id)',
      'create index kernel_jobs_step on kernel_jobs (step_id)',
    ],
  },
  {
    version: 11,
    name: 'the policy an approval was asked under',
    statements: [
      // A digest of the kernel policy that asked for a person (kernel-policy-file.ts): a grant under another is refused.
      'alter table kernel_steps add column policy_version text',
    ],
  },
  BUDGET_TABLES,
  KEY_TABLES,
  AUDIT_TABLES,
  {
    version: 15,
    name: 'thread transcripts shared by gateways',
    statements: [
      // A directive thread (threads/sql-thread-store.ts): its header and last line again, for
      // `kiwi threads list` without reading the lines; `lines` and `bytes` for reads that stop at
      // a cap. `holder` is the process writing it, whose hold lapses at `held_until` unless renewed.
      `create table threads (
        id text primary key,
        client text not null,
        directive text not null,
        header text not null,
        last_line text not null,
        lines integer not null,
        bytes bigint not null,
        written_at timestamptz not null,
        holder text,
        held_by text,
        held_until timestamptz
      )`,
      'create index threads_written on threads (written_at desc, id desc)',
      'create index threads_holder on threads (holder) where holder is not null',
      `create table thread_lines (
        thread_id text not null references threads (id) on delete cascade,
        seq integer not null,
        line text not null,
        primary key (thread_id, seq)
      )`,
    ],
  },
  REGISTRY_TIER_TABLES,
  {
    version: 17,
    name: 'what each execution used',
    statements: [
      // Tokens by model and their spend (budgets/usage-summary.ts), as JSON, set when a chat or a
      // thread run ends; null for executions that called no model.
      'alter table kernel_executions add column usage text',
    ],
  },
  CLIENT_SHARE_MIGRATION,
  {
    version: 19,
    name: 'chats written whole',
    statements: [
      // A chat that ended before it was first written, with no step: its events as one JSON array
      // (chat-rows.ts), read back as the log's rows (event-log.ts); null for every other execution.
      'alter table kernel_executions add column folded_events text',
    ],
  },
];
