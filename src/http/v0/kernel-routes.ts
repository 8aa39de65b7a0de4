import type { Context, Hono } from 'hono';
import { checkExecution, checkRunner, checkServes, executionScope, hasRole, seesSessions, servesAgent, type ExecutionAction } from '../../clients/access.js';
import { LOCAL_CALLER } from '../../clients/client-auth.js';
import type { Caller } from '../../policy/caller.js';
import { isKiwiError, KiwiError } from '../../base/errors.js';
import type { Kernel } from '../../kernel/open-kernel.js';
import type { KernelEventsBus } from '../../contracts/kernel-events-bus.js';
import { TOOLS_PAGE_MAX } from '../../kernel/kernel-limits.js';
import { readToolSchemas } from '../../kernel/tool-schemas.js';
import { EXECUTION_STATUSES, type ExecutionStatus } from '../../kernel/types.js';
import { streamExecutionEvents } from './kernel-event-stream.js';
import { wireEvent, wireExecution, wireExecutionPage, wireTool } from './kernel-wire.js';
import { apiError, intParam, MAX_ID_CHARS, readId, readObject as readBodyObject } from '../server/json-api.js';
import { openSseChannel } from './sse-channel.js';

/**
 * The kernel's HTTP API, Rebuno's v0 (the spec in ../shared/kernel/V0-API.md, whose section
 * numbers the comments cite): executions and their event log, the agents' and the runners'
 * streams and calls, the tools runners publish, signals, health and readiness (GET /metrics is
 * the app's, metrics-route.ts). Errors are the spec's `{"error", "code"}`.
 * Who may call is the request guard's business (client keys as bearer tokens, §2); /v0/health
 * and /v0/ready are open. What a caller may see and do is clients/access.ts's: every route asks
 * it before it touches an object, and another client's object is a 404.
 */

export interface KernelRouteDeps {
  /** Opens the kernel on first use (its database), then the same one. */
  kernel(): Promise<Kernel>;
  /** Told about failures that are not KiwiErrors (bugs); the client sees "internal error". */
  onError?: (error: unknown, info: { requestId: string; route: string }) => void;
  requestId(c: Context): string;
  /** The client key that sent a request; absent (an app without keys): the local operator. */
  callerOf?: (request: Request) => Caller | undefined;
  /** Aborted when the gateway stops: the streams end then, as they never would on their own. */
  streamsEnd?: AbortSignal;
  /** Word of committed events: an execution's stream reads new ones at once. */
  events?: KernelEventsBus;
}

/** §1: bodies over 1 MiB are refused. */
const MAX_BODY_BYTES = 1024 * 1024;


export function mountKernelRoutes(app: Hono, deps: KernelRouteDeps): void {
  const streaming = deps.streamsEnd ? { until: deps.streamsEnd } : {};
  const fail = (c: Context, error: unknown): Response => apiError(c, error, (bug) => deps.onError?.(bug, { requestId: deps.requestId(c), route: c.req.path }));
  const route =
    (handler: (c: Context, kernel: Kernel, caller: Caller) => Promise<Response>) =>
    async (c: Context): Promise<Response> => {
      try {
        return await handler(c, await deps.kernel(), deps.callerOf?.(c.req.raw) ?? LOCAL_CALLER);
      } catch (error) {
        return fail(c, error);
      }
    };
  /** The execution named by the path, once the caller may do `action` to it (404 when it may not see it). */
  const execution = async (c: Context, kernel: Kernel, caller: Caller, action: ExecutionAction) => {
    const owned = await kernel.executions.ownerOf(readId(c.req.param('id'), 'execution id'));
    checkExecution(caller, action, owned);
    return owned;
  };
  /** The runner named by the path, once it is the caller's (a new id becomes the caller's). */
  const runner = async (kernel: Kernel, caller: Caller, id: string | undefined): Promise<string> => {
    const runnerId = readId(id, 'runner id');
    checkRunner(caller, runnerId, await kernel.runners.ownerOf(runnerId));
    return runnerId;
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
    route(async (c, kernel, caller) => {
      checkCreate(caller);
      const { execution } = await kernel.executions.create({ client: caller.client, ...readCreate(await readObject(c)) });
      // Assigned at once when its agent is connected, so the answer may already say running (§5).
      await kernel.agents.assign(execution.id);
      return c.json(wireExecution(await kernel.executions.get(execution.id)), 201);
    }),
  );

  app.get(
    '/v0/executions',
    route(async (c, kernel, caller) => {
      const status = c.req.query('status');
      if (status !== undefined && !(EXECUTION_STATUSES as readonly string[]).includes(status)) {
        throw new KiwiError('INVALID_INPUT', `invalid status ${JSON.stringify(status)}: use one of ${EXECUTION_STATUSES.join(', ')}`);
      }
      const agentId = c.req.query('agent_id');
      const cursor = c.req.query('cursor');
      const page = await kernel.executions.list({
        scope: executionScope(caller),
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
    route(async (c, kernel, caller) => c.json(wireExecution(await kernel.executions.get((await execution(c, kernel, caller, 'read')).id)))),
  );

  app.post(
    '/v0/executions/:id/cancel',
    route(async (c, kernel, caller) => c.json(wireExecution((await kernel.executions.cancel((await execution(c, kernel, caller, 'cancel')).id)).execution))),
  );

  app.get(
    '/v0/executions/:id/events',
    route(async (c, kernel, caller) => {
      // An unknown id has no events (§18.29), and one the caller may not see is unknown to it.
      const owned = await execution(c, kernel, caller, 'read').catch((error: unknown) => {
        if (isKiwiError(error) && error.code === 'NOT_FOUND') return undefined;
        throw error;
      });
      if (owned === undefined) return c.json({ events: [], latest_sequence: 0 });
      const after = intParam(c.req.query('after_sequence'), 0, 0, Number.MAX_SAFE_INTEGER);
      const limit = intParam(c.req.query('limit'), 100, 1, 1000);
      const events = await kernel.executions.events(owned.id, after, limit);
      const sessions = seesSessions(caller, owned.agentId);
      return c.json({ events: events.map((e) => wireEvent(e, { sessions })), latest_sequence: events.at(-1)?.sequence ?? 0 });
    }),
  );

  app.get(
    '/v0/agents/stream',
    route(async (c, kernel, caller) => {
      const [agentId, consumerId] = streamIds(c, 'agent');
      if (!servesAgent(caller, agentId)) throw new KiwiError('POLICY_DENIED', `this key does not serve agent ${JSON.stringify(agentId.slice(0, 80))}; an agent key names the agent ids it serves (\`kiwi keys create NAME --role agent --agent ID\`)`);
      return openSseChannel(c, async (channel) => {
        const connection = { client: caller.client, agentId, consumerId, channel };
        await kernel.agents.connect(connection);
        void channel.closed.then(() => kernel.agents.disconnect(connection)).catch((error: unknown) => deps.onError?.(error, { requestId: deps.requestId(c), route: c.req.path }));
      }, streaming);
    }),
  );

  app.post(
    '/v0/agents/intent',
    route(async (c, kernel, caller) => {
      const body = await readObject(c);
      const result = await kernel.intents.submit({ actor: caller, executionId: bodyId(body, 'execution_id'), sessionId: bodyId(body, 'session_id'), intent: body['intent'] });
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
    route(async (c, kernel, caller) => {
      const body = await readObject(c);
      await kernel.intents.stepResult({ actor: caller, executionId: bodyId(body, 'execution_id'), sessionId: bodyId(body, 'session_id'), stepId: bodyId(body, 'step_id'), success: body['success'], data: body['data'], error: body['error'] });
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/executions/:id/signal',
    route(async (c, kernel, caller) => {
      const id = readId(c.req.param('id'), 'execution id');
      const body = await readObject(c);
      const owned = await kernel.executions.ownerOf(id);
      checkExecution(caller, body['signal_type'] === 'step.approve' ? 'approve' : 'signal', owned);
      await kernel.signals.send(owned.id, { signalType: body['signal_type'], payload: body['payload'], sender: caller.client });
      return c.json({ status: 'ok' });
    }),
  );

  app.get(
    '/v0/executions/:id/stream',
    route(async (c, kernel, caller) => {
      const owned = await execution(c, kernel, caller, 'read');
      // A browser's EventSource reconnects with Last-Event-ID (the last sequence it saw): the stream goes on from there.
      const after = c.req.query('after_sequence') ?? c.req.header('last-event-id');
      return streamExecutionEvents(c, kernel, owned.id, intParam(after, 0, 0, Number.MAX_SAFE_INTEGER), { sessions: seesSessions(caller, owned.agentId), ...streaming, ...(deps.events ? { events: deps.events } : {}) });
    }),
  );

  app.get(
    '/v0/runners/stream',
    route(async (c, kernel, caller) => {
      const [id, consumerId] = streamIds(c, 'runner');
      const runnerId = await runner(kernel, caller, id);
      const capabilities = new Set((c.req.query('capabilities') ?? '').split(',').map((t) => t.trim()).filter((t) => t !== ''));
      checkServes(caller, capabilities);
      await kernel.runners.admit(runnerId, caller.client);
      return openSseChannel(c, async (channel) => {
        const connection = { client: caller.client, runnerId, consumerId, channel, capabilities };
        void channel.closed.then(() => kernel.runners.disconnect(connection)).catch((error: unknown) => deps.onError?.(error, { requestId: deps.requestId(c), route: c.req.path }));
        await kernel.runners.connect(connection);
      }, streaming);
    }),
  );

  app.post(
    '/v0/runners/steps/:stepId/started',
    route(async (c, kernel, caller) => {
      const stepId = readId(c.req.param('stepId'), 'step id');
      const body = await readObject(c);
      const runnerId = body['runner_id'];
      if (typeof runnerId === 'string' && runnerId !== '') await runner(kernel, caller, runnerId);
      await kernel.runners.started(stepId, { executionId: bodyId(body, 'execution_id'), runnerId });
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/runners/:id/results',
    route(async (c, kernel, caller) => {
      const runnerId = await runner(kernel, caller, c.req.param('id'));
      const body = await readObject(c);
      for (const field of ['job_id', 'execution_id', 'step_id']) bodyId(body, field);
      await kernel.runners.result(runnerId, body);
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/runners/:id/capabilities',
    route(async (c, kernel, caller) => {
      const runnerId = await runner(kernel, caller, c.req.param('id'));
      const body = await readObject(c);
      const tools = body['tools'];
      if (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string')) throw new KiwiError('INVALID_INPUT', 'tools must be a list of tool ids');
      checkServes(caller, tools as string[]);
      await kernel.runners.setCapabilities(runnerId, tools as string[]);
      return c.json({ status: 'ok' });
    }),
  );

  app.post(
    '/v0/runners/:id/tools',
    route(async (c, kernel, caller) => {
      const runnerId = await runner(kernel, caller, c.req.param('id'));
      const tools = readToolSchemas(await readObject(c));
      checkServes(caller, tools.map((t) => t.id));
      await kernel.runners.publishTools(runnerId, caller.client, tools);
      return c.body(null, 204);
    }),
  );

  // §7.5's array, a bounded page at a time (TOOLS_PAGE_MAX tools, TOOLS_PAGE_MAX_BYTES of
  // schemas): when more follow, a `Link: <…?after=ID>; rel="next"` header says where (RFC 8288),
  // so the body keeps the spec's shape.
  app.get(
    '/v0/tools',
    route(async (c, kernel) => {
      const prefix = c.req.query('prefix');
      const after = c.req.query('after');
      const page = await kernel.tools.list({
        ...(prefix === undefined ? {} : { prefix }),
        ...(after === undefined ? {} : { after }),
        limit: intParam(c.req.query('limit'), TOOLS_PAGE_MAX, 1, TOOLS_PAGE_MAX),
      });
      if (page.next !== undefined) {
        const next = new URLSearchParams({ ...(prefix === undefined || prefix === '' ? {} : { prefix }), after: page.next, ...(c.req.query('limit') === undefined ? {} : { limit: c.req.query('limit') as string }) });
        c.header('link', `</v0/tools?${next.toString()}>; rel="next"`);
      }
      return c.json(page.tools.map(wireTool));
    }),
  );

  // §7.6: Rebuno answers 204, which the TS SDK cannot parse; the spec asks for this. Both of
  // our stores are Postgres, so an unknown runner is a 404 on both.
  app.delete(
    '/v0/runners/:id',
    route(async (c, kernel, caller) => {
      await kernel.runners.unregister(await runner(kernel, caller, c.req.param('id')));
      return c.json({ status: 'ok' });
    }),
  );

}


/** A body's id field: left to the kernel's own checks when absent or not a string (their messages are the spec's), else as readId. */
function bodyId(body: Record<string, unknown>, field: string): unknown {
  const value = body[field];
  return typeof value === 'string' && value !== '' ? readId(value, field) : value;
}

/** Making executions is a client's: an agent, runner or approver key only serves them. */
function checkCreate(caller: Caller): void {
  if (!hasRole(caller, 'client') && !hasRole(caller, 'admin')) throw new KiwiError('POLICY_DENIED', 'making executions needs a key with the client role (`kiwi keys create NAME --role client`)');
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
const readObject = (c: Context): Promise<Record<string, unknown>> => readBodyObject(c, MAX_BODY_BYTES);

/** The `<kind>_id` and `consumer_id` of an agent or runner stream (§6.1, §7.1). */
function streamIds(c: Context, kind: 'agent' | 'runner'): [string, string] {
  const id = c.req.query(`${kind}_id`) ?? '';
  const consumerId = c.req.query('consumer_id') ?? '';
  if (id === '' || consumerId === '') throw new KiwiError('INVALID_INPUT', `${kind}_id and consumer_id query params are required`);
  if (id.length > MAX_ID_CHARS || consumerId.length > MAX_ID_CHARS) throw new KiwiError('INVALID_INPUT', `${kind}_id and consumer_id must be at most ${MAX_ID_CHARS} characters`);
  return [id, consumerId];
}

