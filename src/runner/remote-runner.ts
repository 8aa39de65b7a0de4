import { randomBytes } from 'node:crypto';
import { parseJsonWithin } from '../base/json-depth.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { describeError, isKiwiError, KiwiError } from '../base/errors.js';
import type { SseEvent } from '../primitives/sse-parser.js';
import type { Caller } from '../policy/caller.js';
import type { ToolProxy } from '../proxy/tool-proxy.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import type { Tool } from '../registry/types.js';
import { jobResult, type JobResult } from './job-result.js';

/**
 * A runner of the kernel's remote steps (§7, §13), run somewhere else than the kernel: it holds
 * `connections` runner streams open, each taking one job at a time, and runs every job through
 * the tool proxy of its own project — the policy, rate limits and audit of this machine, for the
 * caller it is given — then reports the outcome. A stream that drops is opened again after a
 * backoff (the job in hand is finished and reported first, so a connection never holds two); a
 * kernel that refuses the runner (a 4xx) or cannot be reached at all on the first try ends it.
 * Stopping closes the streams, cancels the jobs in hand (reported, retryable for read-only
 * tools, so another runner can take them) and unregisters the runner.
 */

/** The calls the runner makes to the kernel; the CLI's kernel client is one. */
export interface RunnerKernel {
  post(path: string, body: unknown): Promise<unknown>;
  delete(path: string): Promise<unknown>;
  stream(path: string, options: { signal: AbortSignal; maxEventBytes: number; idleMs: number; onOpen?: () => void }): AsyncIterable<SseEvent[]>;
}

export interface RemoteRunnerDeps {
  kernel: RunnerKernel;
  proxy: ToolProxy;
  tools: ReadonlyMap<string, Tool>;
  /** Who the calls are made for: their rights, rate limits and audit records. */
  caller: Caller;
  onEvent(event: RunnerEvent): void;
  random?: () => number;
}

export interface RemoteRunnerOptions {
  runnerId: string;
  /** Exact tool ids (runner-capabilities.ts); a job for any other tool is refused. */
  capabilities: readonly string[];
  connections: number;
  /** A larger SSE event is refused and the stream opened again; default 2 MiB (a job's arguments come in a body of at most 1 MiB, §1). */
  maxEventBytes?: number;
  /** A stream without a byte for this long is taken for dead; default 30 s (the kernel's heartbeat is every 5 s, §8.1). */
  idleMs?: number;
  /** Reconnect delays: min(base·2^(n-1), max)·U(0.5, 1), as Rebuno's runner (§8.3); default 2 s and 60 s. */
  backoff?: { baseMs: number; maxMs: number };
}

export type JobStatus = 'completed' | 'failed' | 'denied';

export type RunnerEvent =
  | { type: 'connected'; consumer: string; again: boolean }
  /** Every connection is open for the first time. */
  | { type: 'ready'; consumers: string[] }
  | { type: 'dropped'; consumer: string; reason: string; retryInMs: number }
  | { type: 'job'; job: string; execution: string; step: string; attempt: number; tool: string; status: JobStatus; retryable: boolean; ms: number; error?: string; reported: boolean }
  | { type: 'warning'; message: string };

export interface RemoteRunner {
  /** Runs until `signal` aborts (resolves) or the kernel refuses the runner (rejects with why), unregistered either way. */
  run(signal: AbortSignal): Promise<void>;
}

/** Beyond this a stream's URL risks the server's header limit (Node's is 16 KiB). */
const MAX_STREAM_PATH = 8 * 1024;
const MAX_ID_CHARS = 256;
const REPORT_ATTEMPTS = 3;

const jobSchema = z.looseObject({
  id: z.string().min(1).max(MAX_ID_CHARS),
  execution_id: z.string().min(1).max(MAX_ID_CHARS),
  step_id: z.string().min(1).max(MAX_ID_CHARS),
  tool_id: z.string().min(1).max(512),
  attempt: z.number().int().optional(),
  arguments: z.unknown(),
});
type Job = z.infer<typeof jobSchema>;

export function createRemoteRunner(deps: RemoteRunnerDeps, options: RemoteRunnerOptions): RemoteRunner {
  const { kernel, onEvent } = deps;
  const { runnerId } = options;
  const offered = new Set(options.capabilities);
  const maxEventBytes = options.maxEventBytes ?? 2 * 1024 * 1024;
  const idleMs = options.idleMs ?? 30_000;
  const backoff = options.backoff ?? { baseMs: 2_000, maxMs: 60_000 };
  const random = deps.random ?? Math.random;
  const runnerPath = `/v0/runners/${encodeURIComponent(runnerId)}`;
  // Rebuno's consumer id: the runner's, and 8 hex digits fixed for the connection's life (§7.1).
  const consumers = Array.from({ length: options.connections }, () => `${runnerId}-${randomBytes(4).toString('hex')}`);
  const streamPath = (consumer: string): string => `/v0/runners/stream?${new URLSearchParams({ runner_id: runnerId, consumer_id: consumer, capabilities: [...offered].join(',') }).toString()}`;
  if (consumers.some((c) => c.length > MAX_ID_CHARS)) throw new KiwiError('INVALID_INPUT', `runner id ${runnerId.slice(0, 40)}… is too long: the kernel takes ids of at most ${MAX_ID_CHARS - 9} characters here`);
  if (streamPath(consumers[0] ?? runnerId).length > MAX_STREAM_PATH) {
    throw new KiwiError('INVALID_INPUT', `${offered.size} tools make the runner stream's URL longer than ${MAX_STREAM_PATH} bytes; offer fewer (kiwi runner --tools)`);
  }

  async function run(signal: AbortSignal): Promise<void> {
    const stop = new AbortController();
    const onStop = (): void => stop.abort();
    signal.addEventListener('abort', onStop, { once: true });
    if (signal.aborted) stop.abort();
    let fatal: { error: unknown } | undefined;
    let waiting = consumers.length;
    let everOpen = false;

    /** One connection: open, take jobs one by one, and open again when it drops. */
    async function connection(consumer: string): Promise<void> {
      let opened = false;
      let failures = 0;
      while (!stop.signal.aborted) {
        let busy = Promise.resolve();
        let reason = 'the kernel ended the stream';
        const onOpen = (): void => {
          failures = 0;
          everOpen = true;
          onEvent({ type: 'connected', consumer, again: opened });
          if (!opened && --waiting === 0) onEvent({ type: 'ready', consumers });
          opened = true;
        };
        try {
          for await (const batch of kernel.stream(streamPath(consumer), { signal: stop.signal, maxEventBytes, idleMs, onOpen })) {
            for (const event of batch) {
              if (event.event !== 'job.assigned') continue;
              busy = busy.then(() => runJob(consumer, event.data, stop.signal)).catch((error: unknown) => onEvent({ type: 'warning', message: `a job failed in the runner itself: ${describeError(error)}` }));
            }
          }
        } catch (error) {
          if (!stop.signal.aborted && (!opened || refusal(error))) {
            fatal ??= { error };
            stop.abort();
          }
          reason = describeError(error);
        }
        // One job at a time per connection, across a reconnect too.
        await busy;
        if (stop.signal.aborted) return;
        failures += 1;
        const retryInMs = Math.round(Math.min(backoff.baseMs * 2 ** (failures - 1), backoff.maxMs) * (0.5 + 0.5 * random()));
        onEvent({ type: 'dropped', consumer, reason, retryInMs });
        await sleep(retryInMs, undefined, { signal: stop.signal }).catch(() => undefined);
      }
    }

    try {
      await Promise.all(consumers.map(connection));
    } finally {
      signal.removeEventListener('abort', onStop);
    }
    if (everOpen) {
      await kernel.delete(runnerPath).catch((error: unknown) => {
        if (!isKiwiError(error, 'NOT_FOUND')) onEvent({ type: 'warning', message: `could not unregister runner ${runnerId}: ${describeError(error)}` });
      });
    }
    if (fatal !== undefined) throw fatal.error;
  }

  async function runJob(consumer: string, raw: string, signal: AbortSignal): Promise<void> {
    const job = readJob(raw);
    if (job === undefined) return;
    const t0 = performance.now();
    // Errors ignored, as Rebuno's runner does: the result is what settles the step.
    await kernel.post(`/v0/runners/steps/${encodeURIComponent(job.step_id)}/started`, { execution_id: job.execution_id, runner_id: runnerId }).catch(() => undefined);
    let outcome: CallOutcome | undefined;
    let result: JobResult;
    if (!offered.has(job.tool_id)) {
      result = { success: false, error: `runner ${runnerId} does not offer tool ${job.tool_id}`, retryable: false };
    } else {
      outcome = await deps.proxy.call({
        target: { tool: job.tool_id, args: job.arguments ?? undefined },
        // The kernel's execution is the conversation the call belongs to.
        caller: { session: job.execution_id, client: deps.caller.client, ...(deps.caller.context ? { context: deps.caller.context } : {}), source: 'runner' },
        run: { signal },
      });
      result = jobResult(outcome, deps.tools.get(job.tool_id)?.mutatesState === false);
    }
    const reported = await report(consumer, job, result);
    onEvent({
      type: 'job',
      job: job.id,
      execution: job.execution_id,
      step: job.step_id,
      attempt: job.attempt ?? 1,
      tool: job.tool_id,
      status: result.success ? 'completed' : outcome?.status === 'denied' ? 'denied' : 'failed',
      retryable: !result.success && result.retryable,
      ms: Math.round(performance.now() - t0),
      ...(result.success ? {} : { error: result.error }),
      reported,
    });
  }

  function readJob(raw: string): Job | undefined {
    let parsed: unknown;
    try {
      parsed = parseJsonWithin(raw);
    } catch {
      onEvent({ type: 'warning', message: `ignored a job.assigned event that is not JSON: ${raw.slice(0, 120)}` });
      return undefined;
    }
    const job = jobSchema.safeParse(parsed);
    if (job.success) return job.data;
    onEvent({ type: 'warning', message: `ignored a job.assigned event without ${job.error.issues.map((i) => i.path.join('.')).join(', ')}: ${raw.slice(0, 120)}` });
    return undefined;
  }

  /** Posts a job's outcome (§7.2), again after a lost connection or a 5xx; true once the kernel took it. */
  async function report(consumer: string, job: Job, result: JobResult): Promise<boolean> {
    // consumer_id frees the connection on a Go kernel too (§7.2 [diff]).
    const body = { job_id: job.id, execution_id: job.execution_id, step_id: job.step_id, consumer_id: consumer, ...result };
    for (let attempt = 1; ; attempt++) {
      try {
        await kernel.post(`${runnerPath}/results`, body);
        return true;
      } catch (error) {
        if (attempt >= REPORT_ATTEMPTS || refusal(error)) {
          onEvent({ type: 'warning', message: `the result of job ${job.id} (${job.tool_id}) was not taken: ${describeError(error)}` });
          return false;
        }
        await sleep(1000 * 2 ** (attempt - 1));
      }
    }
  }

  return { run };
}

/** A 4xx other than 408 and 429: the kernel said no, and asking again gets the same answer. */
function refusal(error: unknown): boolean {
  const status = isKiwiError(error) ? error.details?.['status'] : undefined;
  return typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 429;
}
