import type { UsageSummary } from '../budgets/usage-summary.js';

/**
 * The kernel's objects as the core sees them (camelCase); kernel-wire.ts writes them in the v0
 * API's snake_case. See ../shared/kernel/V0-API.md, which the section numbers below refer to.
 */

export const EXECUTION_STATUSES = ['pending', 'running', 'blocked', 'completed', 'failed', 'cancelled'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<ExecutionStatus> = new Set(['completed', 'failed', 'cancelled']);

/** §5. */
export interface Execution {
  id: string;
  status: ExecutionStatus;
  /** The client of the key that made it (never on the wire: clients/access.ts decides with it). */
  client: string;
  agentId: string;
  labels: Record<string, string>;
  /** Any JSON the creator gave, null when none. */
  input: unknown;
  /** Present only once completed with an output that is not null. */
  output?: unknown;
  /** Tokens by model and their spend, once a chat or thread run that called a model has ended. */
  usage?: UsageSummary;
  /** RFC 3339 with milliseconds. */
  createdAt: string;
  updatedAt: string;
}

/** §14.1. */
export interface KernelEvent {
  id: string;
  executionId: string;
  stepId?: string;
  type: string;
  schemaVersion: 1;
  timestamp: string;
  payload: Record<string, unknown>;
  causationId: string;
  correlationId: string;
  /** Always "" (§14.1). */
  idempotencyKey: '';
  /** Per execution, from 1, no gaps. */
  sequence: number;
}

/** An event before the log gives it an id, a sequence and a time. */
export interface EventDraft {
  type: string;
  payload: Record<string, unknown>;
  stepId?: string;
}
