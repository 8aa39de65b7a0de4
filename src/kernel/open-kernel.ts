import path from 'node:path';
import type { MetricFamily } from '../base/metric-family.js';
import { migrate } from '../store/sql/migrate.js';
import { openPgliteDb } from '../store/sql/pglite-db.js';
import { openPostgresDb } from '../store/sql/postgres-db.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { createAgentHub } from './agent-hub.js';
import { createAgents, type Agents } from './agents.js';
import { watchCommittedEvents } from './committed-events.js';
import type { KernelEventsBus } from '../contracts/kernel-events-bus.js';
import type { Tracing } from '../contracts/tracing.js';
import { createExecutions, type Executions } from './executions.js';
import { createIntents, type Intents } from './intents.js';
import { DEFAULT_KERNEL_LIMITS, type KernelLimits } from './kernel-limits.js';
import { createKernelMetrics } from './kernel-metrics.js';
import { createRetention } from './kernel-retention.js';
import { createRuleRateLimiter, NO_POLICY } from './kernel-policy.js';
import { loadKernelPolicy } from './kernel-policy-file.js';
import { createReaper, reaperBeatMs, type Reaper } from './reaper.js';
import { createRunnerHub } from './runner-hub.js';
import { createRunners, type Runners } from './runners.js';
import { createInstances, heartbeatMs, recoverExecutions } from './instances.js';
import { createSignals, type Signals } from './signals.js';
import { createToolSchemas, type ToolSchemas } from './tool-schemas.js';
import { uuidv7 } from './uuidv7.js';
import { KERNEL_MIGRATIONS } from './kernel-migrations.js';
import type { ChatJournal } from './chat-journal.js';
import { approvalDecision, type ApprovalDecision } from './approval-decision.js';
import { writeChats, type ChatWrite } from './chat-rows.js';
import { waitingApproval, waitingApprovals, type WaitingApproval } from './waiting-approvals.js';

/** The kernel's state: embedded PGlite under `.ai/state/kernel/` by default, a Postgres server when DATABASE_URL is set. */
export interface Kernel {
  executions: Executions;
  agents: Agents;
  runners: Runners;
  intents: Intents;
  signals: Signals;
  /** The tool schemas runners published (§7.5), a bounded page at a time. */
  tools: Pick<ToolSchemas, 'list'>;
  /** §16's metrics: what this process counted, the executions not ended and the size of the database. */
  metricFamilies(): Promise<MetricFamily[]>;
  /** The database's size on disk in bytes (pg_database_size: PGlite's too). */
  databaseBytes(): Promise<number>;
  /** The watcher of deadlines and lost agents; it runs on its own beat. */
  reaper: Reaper;
  /** The gateway's chats, written as executions in one transaction (chat-journal.ts); returns the ids found cancelled. */
  writeChats(writes: ChatWrite[]): Promise<string[]>;
  /** Which of these executions are cancelled. */
  cancelledAmong(ids: string[]): Promise<string[]>;
  /** The calls waiting for a person's approval, oldest first, and the one a step waits for. */
  approvals: { waiting(limit: number): Promise<WaitingApproval[]>; of(stepId: string): Promise<WaitingApproval | undefined> };
  /** How a step that waited for approval was answered; undefined while it waits. */
  approvalOf(executionId: string, stepId: string): Promise<ApprovalDecision | undefined>;
  /** True while the database answers (GET /v0/ready). */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/** A step's deadline when no rule sets one (§11.3). */
const STEP_TIMEOUT_MS = 5 * 60_000;

export const KERNEL_STATE_DIR = path.join('.ai', 'state', 'kernel');
/** Rebuno's policy rules for the kernel's invoke_tool; without the file, no tool call is allowed. */
export const KERNEL_POLICY_FILE = path.join('.ai', 'config', 'kernel-policy.yaml');

export interface OpenKernelOptions {
  /** The project root: PGlite's data goes under it. */
  root: string;
  /** `postgres://…`; absent: embedded PGlite. */
  databaseUrl?: string;
  /** Told of every committed event, for waiters in this process and, through Redis, in the other replicas. */
  events?: KernelEventsBus;
  /** A span per write (transaction); absent, none. */
  tracing?: Tracing;
  /** In memory instead of on disk (tests). */
  inMemory?: boolean;
  /** Embedded PGlite on a worker thread of its own, off the thread that serves requests (the gateway). */
  pgliteThread?: boolean;
  /** Rebuno's policy rules for invoke_tool (kernel-policy-file.ts); absent: nothing runs. */
  policyFile?: string;
  /** The clock (tests move it). */
  now?: () => Date;
  /** The watcher's beat (default 30 s); 0 for none (tests call `reaper.sweep()`). */
  reaperIntervalMs?: number;
  /** An execution's maximum duration (default 1 h). */
  executionTimeoutMs?: number;
  /** How often queued jobs are looked at (default 1 s); 0 for never (tests call `runners.dispatchQueued()`). */
  queueIntervalMs?: number;
  /** How often this instance tells the others on the database it is alive (default 10 s); 0 for once (tests). */
  heartbeatIntervalMs?: number;
  /**
   * The chats this process runs as executions: a cancel lets them write what they queued, and
   * stops them; a read of executions first writes what they hold (chat-journal.ts `holdMs`).
   */
  chats?: Pick<ChatJournal, 'detach' | 'flush'>;
  /** Sizes, per-client quotas and retention (kernel-limits.ts); each absent one has its default. */
  limits?: Partial<KernelLimits>;
}

export async function openKernel(options: OpenKernelOptions): Promise<Kernel> {
  const policy = options.policyFile === undefined ? NO_POLICY : await loadKernelPolicy(options.policyFile);
  const dir = path.join(options.root, KERNEL_STATE_DIR);
  const opened: SqlDb = options.databaseUrl !== undefined ? await openPostgresDb(options.databaseUrl) : await openPgliteDb(options.inMemory ? undefined : dir, { thread: options.pgliteThread === true });
  try {
    await migrate(opened, KERNEL_MIGRATIONS);
  } catch (error) {
    await opened.close();
    throw error;
  }
  const metrics = createKernelMetrics();
  const watched = watchCommittedEvents(opened, (notes) => {
    metrics.committed(notes.flatMap((n) => n.types));
    options.events?.publish(notes);
  });
  const tracing = options.tracing;
  const db: SqlDb = tracing ? { ...watched, transaction: (fn) => tracing.span('kiwi.kernel.write', { 'db.system': watched.kind === 'pglite' ? 'pglite' : 'postgresql' }, () => watched.transaction(fn)) } : watched;
  const now = options.now ?? ((): Date => new Date());
  // Embedded, the database is this process's alone: what a previous run held has lost its
  // connections, and the schemas of its runners went with their streams. On a shared server,
  // other gateways' are alive; the heartbeats tell which are not.
  if (db.kind === 'pglite') {
    await recoverExecutions(db, now());
    await db.query('delete from kernel_instances');
    await db.query('delete from kernel_runner_tools');
  }
  const limits: KernelLimits = { ...DEFAULT_KERNEL_LIMITS, ...options.limits };
  const instanceId = uuidv7();
  const instances = createInstances(db, instanceId, now, limits.instanceTimeoutMs);
  // Embedded, no other instance shares the database: one sign of life is enough.
  await instances.start(db.kind === 'pglite' ? 0 : (options.heartbeatIntervalMs ?? heartbeatMs(limits.instanceTimeoutMs)));
  const schemas = createToolSchemas(db, now, limits);
  const agents = createAgents({ db, hub: createAgentHub(), instanceId, now });
  const runners = createRunners({ db, hub: createRunnerHub(), agents, schemas, metrics, instanceId, now, stepTimeoutMs: STEP_TIMEOUT_MS });
  const signals = createSignals({ db, agents, runners, now, stepTimeoutMs: STEP_TIMEOUT_MS, policyVersion: () => policy.version });
  const retention = createRetention({ db, limits, connectedRunners: () => runners.connectedIds() });
  const reaper = createReaper({ db, agents, now, recoverDead: (at) => instances.recoverDead(at), retain: (at) => retention.sweep(at), ...(options.executionTimeoutMs === undefined ? {} : { executionTimeoutMs: options.executionTimeoutMs }), intervalMs: options.reaperIntervalMs || reaperBeatMs(limits.instanceTimeoutMs) });
  if (options.reaperIntervalMs !== 0) reaper.start();
  if (options.queueIntervalMs !== 0) runners.start(options.queueIntervalMs ?? 1000);
  const executions = createExecutions(db, { now, limits });
  const databaseBytes = async (): Promise<number> => Number((await db.query<{ bytes: number | string }>('select pg_database_size(current_database()) as bytes'))[0]?.bytes ?? 0);
  const chatsWritten = async (): Promise<void> => options.chats?.flush();
  return {
    executions: {
      ...executions,
      async cancel(id) {
        await options.chats?.detach(id);
        return executions.cancel(id);
      },
      async get(id) {
        await chatsWritten();
        return executions.get(id);
      },
      async ownerOf(id) {
        await chatsWritten();
        return executions.ownerOf(id);
      },
      async list(filter) {
        await chatsWritten();
        return executions.list(filter);
      },
      async events(id, after, limit) {
        await chatsWritten();
        return executions.events(id, after, limit);
      },
    },
    agents,
    runners,
    intents: createIntents({ db, agents, runners, signals, policy: () => policy, limiter: createRuleRateLimiter(), metrics, now, stepTimeoutMs: STEP_TIMEOUT_MS }),
    signals,
    tools: { list: (o) => schemas.list(o) },
    async metricFamilies() {
      await chatsWritten();
      const [row] = await db.query<{ n: number }>("select count(*)::integer as n from kernel_executions where status in ('pending', 'running', 'blocked')");
      return [
        ...metrics.families(row?.n ?? 0),
        { name: 'kiwi_kernel_database_bytes', help: "The kernel database's size on disk in bytes (pg_database_size), bounded by the quotas and retention of kernel-limits.ts", type: 'gauge', samples: [{ value: await databaseBytes() }] },
      ];
    },
    databaseBytes,
    async writeChats(writes) {
      const gone = await db.transaction((tx) => writeChats(tx, writes, instanceId));
      const stopped = new Set(gone);
      for (const w of writes) {
        if (stopped.has(w.id)) continue;
        for (const s of w.steps) {
          if ((s.status === 'succeeded' || s.status === 'failed') && s.completedAt !== undefined) metrics.stepFinished(s.toolId, (Date.parse(s.completedAt) - Date.parse(s.createdAt)) / 1000);
        }
      }
      return gone;
    },
    async cancelledAmong(ids) {
      const rows = await db.query<{ id: string }>("select id from kernel_executions where status = 'cancelled' and id in (select value from json_array_elements_text($1::json))", [JSON.stringify(ids)]);
      return rows.map((r) => r.id);
    },
    approvals: { waiting: (limit) => waitingApprovals(db, limit), of: (stepId) => waitingApproval(db, stepId) },
    approvalOf: (executionId, stepId) => approvalDecision(db, executionId, stepId),
    async ready() {
      try {
        await db.query('select 1');
        return true;
      } catch {
        return false;
      }
    },
    reaper,
    async close() {
      await reaper.stop();
      await runners.stop();
      await instances.stop().catch(() => undefined);
      await db.close();
    },
  };
}
