import type { ExecutionPage } from '../../kernel/executions.js';
import type { PublishedTool } from '../../kernel/tool-schemas.js';
import type { Execution, KernelEvent } from '../../kernel/types.js';

/**
 * The kernel's objects as the v0 API writes them (snake_case keys, §1). User JSON (input,
 * output, labels, payload contents) is returned exactly as stored: never re-keyed. `usage` is
 * the gateway's own field beside the spec's (tokens by model and their spend): present only on
 * executions that called a model, so a client of the spec reads nothing new it must understand.
 */

export function wireExecution(e: Execution): Record<string, unknown> {
  return {
    id: e.id,
    status: e.status,
    agent_id: e.agentId,
    labels: e.labels,
    input: e.input,
    ...('output' in e ? { output: e.output } : {}),
    ...(e.usage === undefined ? {} : { usage: e.usage }),
    created_at: e.createdAt,
    updated_at: e.updatedAt,
  };
}

export function wireExecutionPage(page: ExecutionPage): Record<string, unknown> {
  return {
    executions: page.executions.map((e) => ({ id: e.id, status: e.status, agent_id: e.agentId, labels: e.labels, ...(e.usage === undefined ? {} : { usage: e.usage }), created_at: e.createdAt, updated_at: e.updatedAt })),
    next_cursor: page.nextCursor,
  };
}

/** The kernel's own events that name an agent's session; `session_id` and `consumer_id` are credentials. */
const SESSION_EVENTS = new Set(['execution.started', 'agent.timeout']);

/** `sessions`: whether the reader serves the execution's agent; others get the session events without their ids. */
export function wireEvent(e: KernelEvent, options: { sessions: boolean }): Record<string, unknown> {
  let payload = e.payload;
  if (!options.sessions && SESSION_EVENTS.has(e.type)) {
    const { session_id: _session, consumer_id: _consumer, ...rest } = payload;
    payload = rest;
  }
  return {
    id: e.id,
    execution_id: e.executionId,
    ...(e.stepId === undefined ? {} : { step_id: e.stepId }),
    type: e.type,
    schema_version: e.schemaVersion,
    timestamp: e.timestamp,
    payload,
    causation_id: e.causationId,
    correlation_id: e.correlationId,
    idempotency_key: e.idempotencyKey,
    sequence: e.sequence,
  };
}

/** §7.5: an entry of GET /v0/tools. */
export function wireTool(t: PublishedTool): Record<string, unknown> {
  return { id: t.id, description: t.description, input_schema: t.inputSchema, runner_id: t.runnerId, registered_at: t.registeredAt };
}
