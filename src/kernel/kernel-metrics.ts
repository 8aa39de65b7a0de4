import type { HistogramSample, MetricFamily } from '../base/metric-family.js';
import { EXECUTION_STATUSES, type ExecutionStatus } from './types.js';

/**
 * The kernel's metrics (§16), counted by this process since it started, as Prometheus counters
 * are: each gateway on a shared database counts what it did, and a query sums them. Execution
 * statuses are read off the events each transaction committed (committed-events.ts), so they
 * agree with the log; intents, policy time and step time are told by the code that has them.
 * How many executions have not ended is the database's answer, the same on every gateway.
 */

export type IntentDecision = 'accepted' | 'denied' | 'rate_limited' | 'pending_approval';

export interface KernelMetrics {
  /** The types of the events one transaction committed. */
  committed(types: readonly string[]): void;
  intent(type: string, decision: IntentDecision): void;
  /** A step's outcome came (from a runner, an agent, or the gateway's own call): seconds since it was created. */
  stepFinished(toolId: string, seconds: number): void;
  policyEvaluated(action: string, seconds: number): void;
  families(activeExecutions: number): MetricFamily[];
}

/** The status each event moves its execution into (§14.2, §16). */
const STATUS_OF: Readonly<Record<string, ExecutionStatus>> = {
  'execution.created': 'pending',
  'execution.started': 'running',
  'execution.blocked': 'blocked',
  'execution.resumed': 'running',
  'execution.completed': 'completed',
  'execution.failed': 'failed',
  'execution.cancelled': 'cancelled',
  'execution.reset': 'pending',
};

const INTENT_DECISIONS: readonly IntentDecision[] = ['accepted', 'denied', 'rate_limited', 'pending_approval'];
/** Shown at 0 from the start, so that rate() sees them begin: the pairs that can happen. */
const KNOWN_INTENTS: readonly [string, IntentDecision][] = [...INTENT_DECISIONS.map((d): [string, IntentDecision] => ['invoke_tool', d]), ['complete', 'accepted'], ['fail', 'accepted'], ['wait', 'accepted']];

/** Tool calls run from milliseconds to the 5 min step deadline (§11.3). */
const STEP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Rules are matched in microseconds; argument patterns can take longer. */
const POLICY_BUCKETS = [0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1];
/** Tool ids come from callers: past this many, new ones are counted under `_other`, so memory and scrapes stay bounded. */
const MAX_TOOL_SERIES = 500;
const OTHER_TOOLS = '_other';

export function createKernelMetrics(): KernelMetrics {
  const executions = new Map<ExecutionStatus, number>(EXECUTION_STATUSES.map((s) => [s, 0]));
  const intents = new Map<string, number>(KNOWN_INTENTS.map(([type, decision]) => [`${type}\u0000${decision}`, 0]));
  const steps = createHistogram(STEP_BUCKETS, MAX_TOOL_SERIES);
  const policy = createHistogram(POLICY_BUCKETS, 16);
  policy.touch('tool.invoke');

  return {
    committed(types) {
      for (const type of types) {
        const status = STATUS_OF[type];
        if (status !== undefined) executions.set(status, (executions.get(status) ?? 0) + 1);
      }
    },
    intent(type, decision) {
      const key = `${type}\u0000${decision}`;
      intents.set(key, (intents.get(key) ?? 0) + 1);
    },
    stepFinished: (toolId, seconds) => steps.observe(toolId, seconds),
    policyEvaluated: (action, seconds) => policy.observe(action, seconds),
    families(activeExecutions) {
      return [
        {
          name: 'rebuno_executions_total',
          help: 'Execution status changes this process committed, by the status entered (creation enters pending; a reset to pending counts again)',
          type: 'counter',
          samples: [...executions].map(([status, value]) => ({ labels: { status }, value })),
        },
        {
          name: 'rebuno_intents_total',
          help: 'Intents this process decided, by intent type and decision',
          type: 'counter',
          samples: [...intents].map(([key, value]) => {
            const [type, decision] = key.split('\u0000') as [string, string];
            return { labels: { type, decision }, value };
          }),
        },
        { name: 'rebuno_step_duration_seconds', help: `Seconds from a step's creation to its outcome (succeeded or failed), by tool (over ${MAX_TOOL_SERIES} tools: ${OTHER_TOOLS})`, type: 'histogram', samples: steps.samples('tool_id') },
        { name: 'rebuno_policy_eval_seconds', help: 'Seconds spent evaluating the kernel policy, by action', type: 'histogram', samples: policy.samples('action') },
        { name: 'rebuno_active_executions', help: 'Executions not ended (pending, running or blocked) in the database', type: 'gauge', samples: [{ value: activeExecutions }] },
      ];
    },
  };
}

interface Series {
  /** Per bucket, not cumulative; the last slot is over the highest bound. */
  counts: number[];
  sum: number;
  count: number;
}

function createHistogram(bounds: readonly number[], maxSeries: number) {
  const series = new Map<string, Series>();
  const get = (label: string): Series => {
    const key = series.has(label) || series.size < maxSeries ? label : OTHER_TOOLS;
    let s = series.get(key);
    if (s === undefined) {
      s = { counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
      series.set(key, s);
    }
    return s;
  };
  return {
    touch: (label: string): void => void get(label),
    observe(label: string, value: number): void {
      if (!Number.isFinite(value)) return;
      const v = Math.max(0, value);
      const s = get(label);
      const i = bounds.findIndex((b) => v <= b);
      (s.counts[i === -1 ? bounds.length : i] as number)++;
      s.sum += v;
      s.count++;
    },
    samples(labelName: string): HistogramSample[] {
      return [...series].map(([label, s]) => {
        let running = 0;
        const buckets = bounds.map((le, i) => ({ le, count: (running += s.counts[i] as number) }));
        return { labels: { [labelName]: label }, buckets, sum: s.sum, count: s.count };
      });
    },
  };
}
