import { KiwiError } from '../base/errors.js';
import type { SqlDb, SqlQueryable } from '../store/sql/sql-db.js';
import type { Agents } from './agents.js';
import { appendEvents } from './event-log.js';
import type { KernelMetrics } from './kernel-metrics.js';
import type { RunnerConnection, RunnerHub } from './runner-hub.js';
import { isFinalStep, type StepRow } from './steps.js';
import type { ToolSchemaInput, ToolSchemas } from './tool-schemas.js';
import { uuidv7 } from './uuidv7.js';

/**
 * Runners (§7, §11.2, §13): remote steps become jobs, queued until an idle runner connection
 * with the tool takes one. A job is taken under `FOR UPDATE SKIP LOCKED`, so gateways sharing a
 * database never send one job twice. A runner's result settles the step (or retries it, with a
 * backoff, when it says the failure may pass) and frees its connection for the next job. A
 * runner may publish its tools' schemas (§7.5): they are its capabilities from then on, and go
 * when its last stream here closes.
 */

export interface Runners {
  /**
   * A stream opened: the runner recorded, the stream registered (replacing one of the same runner
   * and consumer) with the tools the runner published besides those it names, then queued jobs go out.
   */
  connect(connection: RunnerConnection): Promise<void>;
  /**
   * A stream ended: the jobs it was sent are not queued again (their steps wait for their
   * deadlines), and the runner's schemas go if it was its last stream here (§7.1).
   */
  disconnect(connection: RunnerConnection): Promise<void>;
  /** Replaces the tools of every connection of `runnerId`. */
  setCapabilities(runnerId: string, tools: string[]): Promise<void>;
  /** Replaces the runner's schemas, and the tools of every connection of it (§7.5); `client` registers a new runner. */
  publishTools(runnerId: string, client: string, tools: readonly ToolSchemaInput[]): Promise<void>;
  /**
   * Records the runner as `client`'s if new, within its runner quota (QUOTA_EXCEEDED otherwise):
   * before its stream opens, so that a refusal is a JSON answer and not a broken stream.
   */
  admit(runnerId: string, client: string): Promise<void>;
  /** The runners with a stream open on this instance. */
  connectedIds(): string[];
  /** The client whose runner it is (clients/access.ts checkRunner); undefined for one never heard of. */
  ownerOf(runnerId: string): Promise<string | undefined>;
  /** Drops the runner's record and schemas; its streams stay open (§7.6). Throws NOT_FOUND for a runner never heard of. */
  unregister(runnerId: string): Promise<void>;
  /**
   * Inside an intent's (or an approval's) transaction, which writes its step.dispatched: the job
   * of a remote step, queued. Once committed, pass it to `dispatchQueued`.
   */
  enqueue(tx: SqlQueryable, step: { id: string; executionId: string; toolId: string; arguments: unknown; attempt: number; deadline: string }, at: Date): Promise<string>;
  /**
   * Hands out every queued job that is due and has an idle runner. A job handed out from the
   * queue gets a step.dispatched naming its runner (§13), except `justQueued` (what `enqueue`
   * returned) if it goes out now or went out already: its step.dispatched is the intent's.
   */
  dispatchQueued(justQueued?: string): Promise<void>;
  started(stepId: string, input: { executionId: unknown; runnerId: unknown }): Promise<void>;
  result(runnerId: string, input: Record<string, unknown>): Promise<void>;
  /** Scans the queue every `intervalMs` (1 s, as Rebuno's): retries whose backoff has passed go out. */
  start(intervalMs: number): void;
  stop(): Promise<void>;
}

export interface RunnersDeps {
  db: SqlDb;
  hub: RunnerHub;
  agents: Agents;
  schemas: ToolSchemas;
  metrics?: Pick<KernelMetrics, 'stepFinished'>;
  instanceId: string;
  now: () => Date;
  /** A retried job's deadline (§11.2); default 5 min. */
  stepTimeoutMs: number;
}

interface JobRow extends Record<string, unknown> {
  id: string;
  execution_id: string;
  step_id: string;
  attempt: number;
  tool_id: string;
  arguments: string;
  deadline: string;
  not_before: string;
  created_at: string;
}

const MAX_ERROR_CHARS = 4096;
/** Far more jobs than are ever queued at one instant. */
const MAX_FRESH = 10_000;
/** Go's zero time, which Rebuno's runners receive as `not_before` (§7.1). */
const ZERO_TIME = '0001-01-01T00:00:00Z';

export function createRunners(deps: RunnersDeps): Runners {
  const { db, hub, agents, schemas, now } = deps;
  let dispatching: Promise<void> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  /**
   * Jobs `enqueue` queued, until the attempt to send them that follows their commit: a scan of
   * the queue that gets to one first (the beat, another runner's result) sends it at once, as
   * that attempt would have, so without a second step.dispatched. In insertion order, capped: an
   * id whose transaction failed is never sent, nor forgotten otherwise.
   */
  const fresh = new Set<string>();

  /** Takes one due queued job for one of `tools`, locking it against other gateways. */
  async function take(tools: string[], at: Date): Promise<{ job: JobRow; connection: RunnerConnection } | undefined> {
    return db.transaction(async (tx) => {
      const [job] = await tx.query<JobRow>(
        `select * from kernel_jobs where state = 'queued' and not_before <= $1 and tool_id in (${tools.map((_, i) => `$${i + 2}`).join(', ')}) order by created_at, id limit 1 for update skip locked`,
        [at.toISOString(), ...tools],
      );
      if (job === undefined) return undefined;
      const connection = hub.idleFor(job.tool_id);
      if (connection === undefined) return undefined;
      const [step] = await tx.query<StepRow>('select * from kernel_steps where id = $1 for update', [job.step_id]);
      if (step === undefined || isFinalStep(step.status)) {
        await tx.query('delete from kernel_jobs where id = $1', [job.id]);
        return undefined;
      }
      await tx.query("update kernel_jobs set state = 'sent', runner_id = $2, consumer_id = $3, owner = $4 where id = $1", [job.id, connection.runnerId, connection.consumerId, deps.instanceId]);
      await tx.query("update kernel_steps set status = 'dispatched', runner_id = $2 where id = $1", [job.step_id, connection.runnerId]);
      if (!fresh.delete(job.id)) {
        await appendEvents(tx, job.execution_id, [{ type: 'step.dispatched', stepId: job.step_id, payload: { runner_id: connection.runnerId, job_id: job.id, deadline: job.deadline } }], {}, at);
      }
      connection.job = job.id;
      return { job, connection };
    });
  }

  async function dispatchOnce(): Promise<void> {
    for (;;) {
      const tools = [...hub.idleTools()];
      if (tools.length === 0) return;
      const taken = await take(tools, now());
      if (taken === undefined) return;
      const { job, connection } = taken;
      const sent = connection.channel.send('job.assigned', {
        id: job.id,
        execution_id: job.execution_id,
        step_id: job.step_id,
        attempt: job.attempt,
        tool_id: job.tool_id,
        tool_version: 0,
        arguments: JSON.parse(job.arguments) as unknown,
        deadline: job.deadline,
        not_before: ZERO_TIME,
      });
      if (!sent) connection.job = undefined;
    }
  }

  async function dispatchQueued(justQueued?: string): Promise<void> {
    try {
      await dispatchPass();
    } finally {
      // Sent by now, or it waits in the queue like any other job.
      if (justQueued !== undefined) fresh.delete(justQueued);
    }
  }

  async function dispatchPass(): Promise<void> {
    // One pass at a time; a call during a pass asks for one more after it.
    if (dispatching !== undefined) {
      again = true;
      return dispatching;
    }
    dispatching = (async () => {
      do {
        again = false;
        await dispatchOnce();
      } while (again);
    })().finally(() => (dispatching = undefined));
    return dispatching;
  }

  async function insertJob(tx: SqlQueryable, step: Parameters<Runners['enqueue']>[1], at: Date, notBefore?: Date): Promise<string> {
    const id = uuidv7(at.getTime());
    await tx.query(
      "insert into kernel_jobs (id, execution_id, step_id, attempt, tool_id, arguments, deadline, not_before, state, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9)",
      [id, step.executionId, step.id, step.attempt, step.toolId, JSON.stringify(step.arguments ?? null), step.deadline, (notBefore ?? at).toISOString(), at.toISOString()],
    );
    return id;
  }

  return {
    async connect(connection) {
      // Registered at once: a capabilities update that follows the stream's opening finds it.
      const replaced = hub.add(connection);
      replaced?.channel.close();
      await schemas.record(connection.runnerId, connection.client);
      for (const tool of await schemas.toolsOf(connection.runnerId)) connection.capabilities.add(tool);
      await dispatchQueued();
    },

    async disconnect(connection) {
      // Only this gateway's streams are known: on a shared server, another gateway may still
      // hold one of the runner's, whose schemas go all the same until it publishes again.
      if (hub.remove(connection) && hub.of(connection.runnerId).length === 0) await schemas.forget(connection.runnerId);
    },

    async setCapabilities(runnerId, tools) {
      for (const c of hub.of(runnerId)) c.capabilities = new Set(tools);
      await dispatchQueued();
    },

    admit: (runnerId, client) => schemas.record(runnerId, client),

    connectedIds: () => hub.runnerIds(),

    ownerOf: (runnerId) => schemas.ownerOf(runnerId),

    async publishTools(runnerId, client, tools) {
      await schemas.publish(runnerId, client, tools);
      for (const c of hub.of(runnerId)) c.capabilities = new Set(tools.map((t) => t.id));
      await dispatchQueued();
    },

    async unregister(runnerId) {
      if (!(await schemas.unregister(runnerId))) throw new KiwiError('NOT_FOUND', `not found: runner ${runnerId}`);
    },

    async enqueue(tx, step, at) {
      const id = await insertJob(tx, step, at);
      fresh.add(id);
      if (fresh.size > MAX_FRESH) fresh.delete(fresh.values().next().value as string);
      return id;
    },

    dispatchQueued,

    start(intervalMs) {
      timer ??= setInterval(() => void dispatchQueued().catch(() => undefined), intervalMs);
      timer.unref();
    },

    async stop() {
      clearInterval(timer);
      timer = undefined;
      await dispatching?.catch(() => undefined);
    },

    async started(stepId, input) {
      if (typeof input.executionId !== 'string' || input.executionId === '' || typeof input.runnerId !== 'string' || input.runnerId === '') {
        throw new KiwiError('INVALID_INPUT', 'execution_id and runner_id are required');
      }
      const { runnerId, executionId } = input;
      const at = now();
      await db.transaction(async (tx) => {
        const step = sentTo(await tx.query<StepRow>('select * from kernel_steps where id = $1 and execution_id = $2 for update', [stepId, executionId]), stepId, runnerId);
        if (step.status === 'running' || isFinalStep(step.status)) return;
        await tx.query("update kernel_steps set status = 'running' where id = $1", [stepId]);
        await appendEvents(tx, step.execution_id, [{ type: 'step.started', stepId, payload: { runner_id: runnerId } }], {}, at);
      });
    },

    async result(runnerId, input) {
      const jobId = input['job_id'];
      const executionId = input['execution_id'];
      const stepId = input['step_id'];
      if (typeof jobId !== 'string' || jobId === '' || typeof executionId !== 'string' || executionId === '' || typeof stepId !== 'string' || stepId === '') {
        throw new KiwiError('INVALID_INPUT', 'job_id, execution_id, and step_id are required');
      }
      const at = now();
      // The connection that ran the job takes the next one, whatever the outcome (§7.2); only the runner's own.
      const holder = hub.holding(jobId);
      if (holder?.runnerId === runnerId) holder.job = undefined;
      try {
        const final = await db.transaction(async (tx) => {
          const step = sentTo(await tx.query<StepRow>('select * from kernel_steps where id = $1 and execution_id = $2 for update', [stepId, executionId]), stepId, runnerId);
          if (isFinalStep(step.status)) throw new KiwiError('CONFLICT', 'step already resolved');
          // A late result of an attempt that was retried since is not the step's.
          const deleted = await tx.query('delete from kernel_jobs where id = $1 and step_id = $2 and runner_id = $3 returning id', [jobId, stepId, runnerId]);
          if (deleted.length === 0) throw new KiwiError('CONFLICT', `job ${jobId} is not the attempt of step ${stepId} that runner ${runnerId} runs now`);
          if (input['success'] === true) {
            const data = input['data'] ?? null;
            await tx.query("update kernel_steps set status = 'succeeded', result = $2, completed_at = $3 where id = $1", [stepId, JSON.stringify(data), at.toISOString()]);
            await appendEvents(tx, executionId, [{ type: 'step.completed', stepId, payload: { result: data } }], {}, at);
            return { push: { execution_id: executionId, step_id: stepId, status: 'succeeded', result: data }, step };
          }
          const error = typeof input['error'] === 'string' && input['error'] !== '' ? input['error'].slice(0, MAX_ERROR_CHARS) : `runner ${runnerId} reported a failure`;
          if (input['retryable'] === true && step.attempt < step.max_attempts) {
            const next = step.attempt + 1;
            await appendEvents(tx, executionId, [{ type: 'step.failed', stepId, payload: { error, retryable: true } }, { type: 'step.retried', stepId, payload: { next_attempt: next } }], {}, at);
            const deadline = new Date(at.getTime() + deps.stepTimeoutMs).toISOString();
            await tx.query("update kernel_steps set status = 'pending', attempt = $2, deadline = $3 where id = $1", [stepId, next, deadline]);
            // 2 s before attempt 2, 4 s before 3, at most 30 s (§11.2).
            const backoffMs = Math.min(1000 * 2 ** (next - 1), 30_000);
            await insertJob(tx, { id: stepId, executionId, toolId: step.tool_id, arguments: JSON.parse(step.arguments) as unknown, attempt: next, deadline }, at, new Date(at.getTime() + backoffMs));
            return undefined;
          }
          await tx.query("update kernel_steps set status = 'failed', error = $2, completed_at = $3 where id = $1", [stepId, error, at.toISOString()]);
          await appendEvents(tx, executionId, [{ type: 'step.failed', stepId, payload: { error, retryable: false } }], {}, at);
          return { push: { execution_id: executionId, step_id: stepId, status: 'failed', error, ...(input['data'] === undefined ? {} : { result: input['data'] }) }, step };
        });
        if (final !== undefined) {
          deps.metrics?.stepFinished(final.step.tool_id, (at.getTime() - Date.parse(final.step.created_at)) / 1000);
          const [session] = await db.query<{ id: string }>('select id from kernel_sessions where execution_id = $1', [executionId]);
          if (session !== undefined) await agents.push(session.id, 'tool.result', final.push);
        }
      } finally {
        await dispatchQueued();
      }
    },
  };
}

/**
 * The step, if its current attempt was sent to `runnerId`: a local step, or one sent to another
 * runner, is not found, as an unknown one is, so that no runner settles what is not its own.
 */
function sentTo(rows: StepRow[], stepId: string, runnerId: string): StepRow {
  const [step] = rows;
  if (step === undefined || !step.remote || step.runner_id !== runnerId) throw new KiwiError('NOT_FOUND', `not found: step ${stepId}`);
  return step;
}
