import path from 'node:path';
import type { MetricFamily } from '../metric-family.js';
import { migrate } from '../store/sql/migrate.js';
import { openPgliteDb } from '../store/sql/pglite-db.js';
import { openPostgresDb } from '../store/sql/postgres-db.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { createAgentHub } from './agent-hub.js';
import { createAgents, type Agents } from './agents.js';
import { watchCommittedEvents } from './committed-events.js';
import { appendEvents } from './event-log.js';
import { setExecutionStatus } from './execution-rows.js';
import { cancelOpenSteps } from './steps.js';
import { createExecutions, type Executions } from './executions.js';
import { createIntents, type Intents } from './intents.js';
import { createKernelMetrics } from './kernel-metrics.js';
import { createRateLimiter, NO_POLICY } from './kernel-policy.js';
import { loadKernelPolicy } from './kernel-policy-file.js';
import { createReaper, type Reaper } from './reaper.js';
import { createRunnerHub } from './runner-hub.js';
import { createRunners, type Runners } from './runners.js';
import { createSignals, type Signals } from './signals.js';
import { createToolSchemas, type PublishedTool } from './tool-schemas.js';
import { uuidv7 } from './uuidv7.js';
import { KERNEL_MIGRATIONS } from './kernel-migrations.js';
import type { ChatJournal } from './chat-journal.js';
import { writeChats, type ChatWrite } from './chat-rows.js';

/** The kernel's state: embedded PGlite under `.ai/state/kernel/` by default, a Postgres server when DATABASE_URL is set. */
export interface Kernel {
  executions: Executions;
  agents: Agents;
  runners: Runners;
  intents: Intents;
  signals: Signals;
  /** The tool schemas runners published (§7.5). */
  tools: { list(prefix?: string): Promise<PublishedTool[]> };
  /** §16's metrics: what this process counted, and the executions not ended in the database. */
  metricFamilies(): Promise<MetricFamily[]>;
  /** The watcher of deadlines and lost agents; it runs on its own beat. */
  reaper: Reaper;
  /** The gateway's chats, written as executions in one transaction (chat-journal.ts); returns the ids found cancelled. */
  writeChats(writes: ChatWrite[]): Promise<string[]>;
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
  /** In memory instead of on disk (tests). */
  inMemory?: boolean;
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
  /** The chats this process runs as executions: a cancel lets them write what they queued, and stops them. */
  chats?: Pick<ChatJournal, 'detach'>;
}

export async function openKernel(options: OpenKernelOptions): Promise<Kernel> {
  const policy = options.policyFile === undefined ? NO_POLICY : await loadKernelPolicy(options.policyFile);
  const dir = path.join(options.root, KERNEL_STATE_DIR);
  const opened: SqlDb = options.databaseUrl !== undefined ? await openPostgresDb(options.databaseUrl) : await openPgliteDb(options.inMemory ? undefined : dir);
  try {
    await migrate(opened, KERNEL_MIGRATIONS);
  } catch (error) {
    await opened.close();
    throw error;
  }
  const metrics = createKernelMetrics();
  const db = watchCommittedEvents(opened, (types) => metrics.committed(types));
  const now = options.now ?? ((): Date => new Date());
  // Embedded, the database is this process's alone: sessions left by a previous run have lost
  // their connections, and the schemas of its runners went with their streams. (On a shared
  // server, other gateways' sessions are alive; telling which are not would need the
  // instances' heartbeats, not built yet.)
  if (db.kind === 'pglite') {
    await recoverSessions(db, now());
    await db.query('delete from kernel_runner_tools');
  }
  const instanceId = uuidv7();
  const schemas = createToolSchemas(db, now);
  const agents = createAgents({ db, hub: createAgentHub(), instanceId, now });
  const runners = createRunners({ db, hub: createRunnerHub(), agents, schemas, metrics, instanceId, now, stepTimeoutMs: STEP_TIMEOUT_MS });
  const signals = createSignals({ db, agents, runners, now, stepTimeoutMs: STEP_TIMEOUT_MS });
  const reaper = createReaper({ db, agents, now, ...(options.executionTimeoutMs === undefined ? {} : { executionTimeoutMs: options.executionTimeoutMs }), ...(options.reaperIntervalMs ? { intervalMs: options.reaperIntervalMs } : {}) });
  if (options.reaperIntervalMs !== 0) reaper.start();
  if (options.queueIntervalMs !== 0) runners.start(options.queueIntervalMs ?? 1000);
  const executions = createExecutions(db, { now });
  return {
    executions: {
      ...executions,
      async cancel(id) {
        await options.chats?.detach(id);
        return executions.cancel(id);
      },
    },
    agents,
    runners,
    intents: createIntents({ db, agents, runners, signals, policy: () => policy, limiter: createRateLimiter(), metrics, now, stepTimeoutMs: STEP_TIMEOUT_MS }),
    signals,
    tools: { list: (prefix) => schemas.list(prefix) },
    async metricFamilies() {
      const [row] = await db.query<{ n: number }>("select count(*)::integer as n from kernel_executions where status in ('pending', 'running', 'blocked')");
      return metrics.families(row?.n ?? 0);
    },
    async writeChats(writes) {
      const gone = await db.transaction((tx) => writeChats(tx, writes));
      const stopped = new Set(gone);
      for (const w of writes) {
        if (stopped.has(w.id)) continue;
        for (const s of w.steps) {
          if ((s.status === 'succeeded' || s.status === 'failed') && s.completedAt !== undefined) metrics.stepFinished(s.toolId, (Date.parse(s.completedAt) - Date.parse(s.createdAt)) / 1000);
        }
      }
      return gone;
    },
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
      await db.close();
    },
  };
}

/**
 * §16: on restart, sessions are purged and executions that were running or blocked go back to
 * pending, to be assigned again; the steps their agents held are cancelled with them. A chat of
 * the gateway cannot go on (its client's connection went with the process): it fails.
 */
async function recoverSessions(db: SqlDb, at: Date): Promise<void> {
  const stale = await db.query<{ id: string; status: string; origin: string }>("select id, status, origin from kernel_executions where status in ('running', 'blocked')");
  for (const { id, status, origin } of stale) {
    await db.transaction(async (tx) => {
      if (origin === 'chat') {
        await cancelOpenSteps(tx, id, 'gateway stopped', at);
        await setExecutionStatus(tx, id, 'failed', at);
        await appendEvents(tx, id, [{ type: 'execution.failed', payload: { error: 'the gateway stopped before the chat ended' } }], {}, at);
        return;
      }
      await cancelOpenSteps(tx, id, 'agent disconnected', at);
      await setExecutionStatus(tx, id, 'pending', at);
      await appendEvents(tx, id, [{ type: 'execution.reset', payload: { reason: 'recovery', from_status: status } }], {}, at);
    });
  }
  await db.query('delete from kernel_sessions');
}
