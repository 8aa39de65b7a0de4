import type { Context, Hono } from 'hono';
import { LOCAL_CLIENT } from '../clients/client-auth.js';
import type { Caller } from '../proxy/caller.js';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isKiwiError, KiwiError } from '../errors.js';
import type { Kernel } from '../kernel/open-kernel.js';
import { readToolSchemas } from '../kernel/tool-schemas.js';
import { EXECUTION_STATUSES, type ExecutionStatus } from '../kernel/types.js';
import { streamExecutionEvents } from './kernel-event-stream.js';
import { wireEvent, wireExecution, wireExecutionPage, wireTool } from './kernel-wire.js';
import { readJsonBody } from './read-json-body.js';
import { openSseChannel } from './sse-channel.js';

/**
 * The kernel's HTTP API, Rebuno's v0 (the spec in ../shared/kernel/V0-API.md, whose section
 * numbers the comments cite): executions and their event log, the agents' and the runners'
 * streams and calls, the tools runners publish, signals, health and readiness (GET /metrics is
 * the app's, metrics-route.ts). Errors are the spec's `{"error", "code"}`.
 * Who may call is the request guard's business (client keys as bearer tokens, §2); /v0/health
 * and /v0/ready are open.
 */

export interface KernelRouteDeps {
  /** Opens the kernel on first use (its database), then the same one. */
  kernel(): Promise<Kernel>;
  /** Told about failures that are not KiwiErrors (bugs); the client sees "internal error". */
  onError?: (error: unknown, info: { requestId: string; route: string }) => void;
  requestId(c: Context): string;
  /** The client key that sent a request; an approval is recorded as decided by it. */
  callerOf?: (request: Request) => Caller | undefined;
}

/** §1: bodies over 1 MiB are refused. */
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_ID_CHARS = 256;

const SPEC_CODES: Partial<Record<string, [ContentfulStatusCode, string]>> = {
  INVALID_INPUT: [400, 'VALIDATION_ERROR'],
  PAYLOAD_TOO_LARGE: [400, 'VALIDATION_ERROR'],
  REQUEST_TIMEOUT: [400, 'VALIDATION_ERROR'],
  UNAUTHORIZED: [401, 'UNAUTHORIZED'],
  POLICY_DENIED: [403, 'FORBIDDEN'],
  NOT_FOUND: [404, 'NOT_FOUND'],
  CONFLICT: [409, 'CONFLICT'],
};

export function mountKernelRoutes(app: Hono, deps: KernelRouteDeps): void {
  const fail = (c: Context, error: unknown): Response => {
    const mapped = isKiwiError(error) ? SPEC_CODES[error.code] : undefined;
    if (mapped === undefined || !isKiwiError(error)) {
      deps.onError?.(error, { requestId: deps.requestId(c), route: c.req.path });
      return c.json({ error: 'internal error', code: 'INTERNAL_ERROR' }, 500);
    }
    return c.json({ error: error.message, code: mapped[1] }, mapped[0]);
  };
  const route =
    (handler: (c: Context, kernel: Kernel) => Promise<Response>) =>
    async (c: Context): Promise<Response> => {
      try {
        return await handler(c, await deps.kernel());
      } catch (error) {
        return fail(c, error);
      }
    };

  app.get('/v0/health', (c) => c.json({ status: 'ok' }));
  app.get('/v0/ready', async (c) => {
    const ready = await deps
      .kernel()
      .then((k) => k.ready())
      .catch(() => false);
    return ready ? c.json({ status: 'ready' }) : c.json({ error: 'service unavailable: database not reachable', code: 'SERVICE_UNAVAILABLE' }, 503);
  });

  app.post(
    '/v0/executions',
    route(async (c, kernel) => {
      const { execution } = await kernel.executions.create(readCreate(await readObject(c)));
      // Assigned at once when its agent is connected, so the answer may already say running (§5).
      await kernel.agents.assign(execution.id);
      return c.json(wireExecution(await kernel.executions.get(execution.id)), 201);
    }),
  );

  app.get(
    '/v0/executions',
    route(async (c, kernel) => {
      const status = c.req.query('status');
      if (status !== undefined && !(EXECUTION_STATUSES as readonly string[]).includes(status)) {
        throw new KiwiError('INVALID_INPUT', `invalid status ${JSON.stringify(status)}: use one of ${EXECUTION_STATUSES.join(', ')}`);
      }
      const agentId = c.req.query('agent_id');
      const cursor = c.req.query('cursor');
      const page = await kernel.executions.list({
        ...(status === undefined ? {} : { status: status as ExecutionStatus }),
        ...(agentId === undefined || agentId === '' ? {} : { agentId }),
        labels: readLabelFilter(c.req.queries('label') ?? []),
        ...(cursor === undefined || cursor === '' ? {} : { cursor }),
        limit: intParam(c.req.query('limit'), 50, 1, 200),
      });
      return c.json(wireExecutionPage(page));
    }),
  );

  app.get(
    '/v0/executions/:id',
    route(async (c, kernel) => c.json(wireExecution(await kernel.executions.get(c.req.param('id') as string)))),
  );

  app.post(
    '/v0/executions/:id/cancel',
    route(async (c, kernel) => c.json(wireExecution((await kernel.executions.cancel(c.req.param('id') as string)).execution))),
  );

  app.get(
    '/v0/executions/:id/events',
    route(async (c, kernel) => {
      const after = intParam(c.req.query('after_sequence'), 0, 0, Number.MAX_SAFE_INTEGER);
      const limit = intParam(c.req.query('limit'), 100, 1, 1000);
      const events = await kernel.executions.events(c.req.param('id') as string, after, limit);
      return c.json({ events: events.map(wireEvent), latest_sequence: events.at(-1)?.sequence ?? 0 });
    }),
  );

  app.get(
    '/v0/agents/stream',
    route(async (c, kernel) => {
      const [agentId, consumerId] = streamIds(c, 'agent');
      return openSseChannel(c, async (channel) => {
        const connection = { agentId, consumerId, channel };
        await kernel.agents.connect(connection);
        void channel.closed.then(() => kernel.agents.disconnect(connection)).catch((error: unknown) => deps.onError?.(error, { requestId: deps.requestId(c), route: c.req.path }));
      });
    }),
  );

  app.post(
    '/v0/agents/intent',
    route(async (c, kernel) => {
      const body = await readObject(c);
      const result = await kernel.intents.submit({ executionId: body['execution_id'], sessionId: body['session_id'], intent: body['intent'] });
      return c.json({
        accepted: result.accepted,
        ...(result.stepId === undefined ? {} : { step_id: result.stepId }),
        ...(result.error === undefined ? {} : { error: result.error }),
        ...(result.pendingApproval ? { pending_approval: true } : {}),
      });
    }),
  );

  app.post(
    '/v0/agents/step-result',
    route(async (c, kernel) => {
      const body = await readObject(c);
      await kernel.intents.stepResult({ executionId: body['execution_id'], sessionId: body['session_id'], stepId: body['step_id'], success: body['success'], data: body['data'], error: body['error'] });
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/executions/:id/signal',
    route(async (c, kernel) => {
      const body = await readObject(c);
      await kernel.signals.send(c.req.param('id') as string, { signalType: body['signal_type'], payload: body['payload'], sender: deps.callerOf?.(c.req.raw)?.client ?? LOCAL_CLIENT });
      return c.json({ status: 'ok' });
    }),
  );

  app.get(
    '/v0/executions/:id/stream',
    route(async (c, kernel) => {
      // A browser's EventSource reconnects with Last-Event-ID (the last sequence it saw): the stream goes on from there.
      const after = c.req.query('after_sequence') ?? c.req.header('last-event-id');
      return streamExecutionEvents(c, kernel, c.req.param('id') as string, intParam(after, 0, 0, Number.MAX_SAFE_INTEGER));
    }),
  );

  app.get(
    '/v0/runners/stream',
    route(async (c, kernel) => {
      const [runnerId, consumerId] = streamIds(c, 'runner');
      const capabilities = new Set((c.req.query('capabilities') ?? '').split(',').map((t) => t.trim()).filter((t) => t !== ''));
      return openSseChannel(c, async (channel) => {
        const connection = { runnerId, consumerId, channel, capabilities };
        void channel.closed.then(() => kernel.runners.disconnect(connection)).catch((error: unknown) => deps.onError?.(error, { requestId: deps.requestId(c), route: c.req.path }));
        await kernel.runners.connect(connection);
      });
    }),
  );

  app.post(
    '/v0/runners/steps/:stepId/started',
    route(async (c, kernel) => {
      const body = await readObject(c);
      await kernel.runners.started(c.req.param('stepId') as string, { executionId: body['execution_id'], runnerId: body['runner_id'] });
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/runners/:id/results',
    route(async (c, kernel) => {
      const body = await readObject(c);
      await kernel.runners.result(c.req.param('id') as string, body);
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/runners/:id/capabilities',
    route(async (c, kernel) => {
      const body = await readObject(c);
      const tools = body['tools'];
      if (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string')) throw new KiwiError('INVALID_INPUT', 'tools must be a list of tool ids');
      await kernel.runners.setCapabilities(c.req.param('id') as string, tools as string[]);
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/runners/:id/tools',
    route(async (c, kernel) => {
      const runnerId = c.req.param('id') as string;
      if (runnerId.length > MAX_ID_CHARS) throw new KiwiError('INVALID_INPUT', `the runner id is longer than ${MAX_ID_CHARS} characters`);
      await kernel.runners.publishTools(runnerId, readToolSchemas(await readObject(c)));
      return c.body(null, 204);
    }),
  );

  app.get(
    '/v0/tools',
    route(async (c, kernel) => c.json((await kernel.tools.list(c.req.query('prefix'))).map(wireTool))),
  );

  // §7.6: Rebuno answers 204, which the TS SDK cannot parse; the spec asks for this. Both of
  // our stores are Postgres, so an unknown runner is a 404 on both.
  app.delete(
    '/v0/runners/:id',
    route(async (c, kernel) => {
      await kernel.runners.unregister(c.req.param('id') as string);
      return c.json({ status: 'ok' });
    }),
  );

}

/** A whole number in [min, max]: over max is clamped, anything unreadable is the default (§5). */
function intParam(value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || !/^\d+$/.test(value)) return fallback;
  const n = Number(value);
  if (n < min) return fallback;
  return Math.min(n, max);
}

/** `key:value` pairs, split at the first colon (§5). */
function readLabelFilter(pairs: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of pairs) {
    const colon = pair.indexOf(':');
    if (colon <= 0) throw new KiwiError('INVALID_INPUT', `invalid label filter ${JSON.stringify(pair.slice(0, 200))}: write key:value`);
    labels[pair.slice(0, colon)] = pair.slice(colon + 1);
  }
  return labels;
}

function readCreate(b: Record<string, unknown>): { agentId: string; input: unknown; labels: Record<string, string> } {
  const agentId = b['agent_id'];
  if (typeof agentId !== 'string' || agentId === '') throw new KiwiError('INVALID_INPUT', 'agent_id is required');
  if (agentId.length > MAX_ID_CHARS) throw new KiwiError('INVALID_INPUT', `agent_id is longer than ${MAX_ID_CHARS} characters`);
  const labels = b['labels'] ?? {};
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) throw new KiwiError('INVALID_INPUT', 'labels must be an object of strings');
  for (const [key, value] of Object.entries(labels)) {
    if (typeof value !== 'string') throw new KiwiError('INVALID_INPUT', `label ${JSON.stringify(key)} must be a string`);
  }
  return { agentId, input: b['input'] ?? null, labels: labels as Record<string, string> };
}

/** A request body that is a JSON object (§1), capped at 1 MiB. */
async function readObject(c: Context): Promise<Record<string, unknown>> {
  const body = await readJsonBody(c, MAX_BODY_BYTES);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new KiwiError('INVALID_INPUT', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** The `<kind>_id` and `consumer_id` of an agent or runner stream (§6.1, §7.1). */
function streamIds(c: Context, kind: 'agent' | 'runner'): [string, string] {
  const id = c.req.query(`${kind}_id`) ?? '';
  const consumerId = c.req.query('consumer_id') ?? '';
  if (id === '' || consumerId === '') throw new KiwiError('INVALID_INPUT', `${kind}_id and consumer_id query params are required`);
  if (id.length > MAX_ID_CHARS || consumerId.length > MAX_ID_CHARS) throw new KiwiError('INVALID_INPUT', `${kind}_id and consumer_id must be at most ${MAX_ID_CHARS} characters`);
  return [id, consumerId];
}

