import { Hono, type Context } from 'hono';
import { KiwiError } from '../../base/errors.js';
import type { RunLoop } from '../../loop/loop-types.js';
import type { Kernel } from '../../kernel/open-kernel.js';
import type { KernelEventsBus } from '../../contracts/kernel-events-bus.js';
import type { Tracing } from '../../contracts/tracing.js';
import { trackBody } from './track-body.js';
import type { MetricFamily } from '../../base/metric-family.js';
import { mountConsole, type ConsoleDeps } from '../../console/console-routes.js';
import type { AdminCall } from '../../console/console-route.js';
import type { Caller } from '../../policy/caller.js';
import { ADMIN_ROUTES, mountAdminRoutes, type AdminRouteDeps } from '../admin/admin-routes.js';
import { anthropicMessagesProtocol } from '../chat/anthropic/anthropic-messages.js';
import { createChatHandler } from '../chat/chat-handler.js';
import { mountKernelRoutes } from '../v0/kernel-routes.js';
import { createMetricsHandler } from '../metrics/metrics-route.js';
import { anthropicModelList, openAiModelList, UNAVAILABLE_UPSTREAMS_HEADER, unavailableHeader, type ModelList } from '../chat/models-list.js';
import { openAiChatProtocol } from '../chat/openai/openai-chat.js';
import { openAiResponsesProtocol } from '../chat/responses/openai-responses.js';
import { sentDirectly } from './node-bindings.js';
import { DEFAULT_MAX_BODY_BYTES } from './read-json-body.js';
import { pickRequestId, REQUEST_ID_HEADER } from './request-id.js';
import { createRequestGuard, DEFAULT_ALLOWED_HOSTS, type RequestGuard } from './request-guard.js';

/**
 * The gateway's HTTP app: the OpenAI (Chat Completions, Responses) and Anthropic chat edges,
 * the model list, health, and (when given) the MCP endpoint. No CORS headers: the gateway is for
 * agents and servers, and a deployment that wants browsers to call it adds CORS deliberately, in
 * front of it.
 */

export interface GatewayAppDeps {
  runLoop: RunLoop;
  /** What GET /v1/models lists, and the upstreams whose own list could not be read; may ask the upstreams (bounded and cached by the caller). */
  models(): ModelList | Promise<ModelList>;
  /** Extra fields for /healthz. */
  health(): Record<string, unknown>;
  /** The counters served as JSON on GET /metrics (`kiwi stats` reads them). */
  metrics?: () => Record<string, unknown>;
  /** The same counters for Prometheus (GET /metrics with `Accept: text/plain`), after the kernel's. */
  metricFamilies?: () => MetricFamily[];
  /** Mounted on /mcp (all methods) when given. */
  mcp?: (c: Context) => Promise<Response>;
  /** The admin API under /admin/v1 (admin-routes.ts) when given. */
  admin?: Pick<AdminRouteDeps, 'kernel' | 'keys' | 'counters' | 'audit' | 'threads' | 'usage' | 'catalog' | 'playground'>;
  /** The web console at /ui (src/console), over the admin API, when given with it. */
  console?: Pick<ConsoleDeps, 'auth' | 'sessionSecret'>;
  /** The kernel's v0 API (kernel-routes.ts) when given: it opens on first use. */
  kernel?: () => Promise<Kernel>;
  /** Aborted when the gateway stops: the kernel's streams end then instead of holding the shutdown's grace period. */
  streamsEnd?: AbortSignal;
  /** Word of the kernel's committed events, for its streams. */
  kernelEvents?: KernelEventsBus;
  /** Host, Origin, client keys and per-client concurrency, checked before every route; default: local host names, no browser origins, no keys. */
  guard?: RequestGuard;
  limits?: {
    /** Largest request body, enforced while reading; default 4 MiB. */
    maxBodyBytes?: number;
    /** Quiet time in a stream before a keep-alive is sent; default 15 s, 0 for none. */
    keepAliveMs?: number;
  };
  /** Told about failures that are not KiwiErrors (bugs), whose messages clients never see: log them here. */
  onError?: (error: unknown, info: { requestId: string; route: string }) => void;
  /** A span per request (until its response has ended), and its trace id in `x-kiwi-trace-id`. */
  tracing?: Tracing;
}

export const TRACE_ID_HEADER = 'x-kiwi-trace-id';

export const DEFAULT_KEEP_ALIVE_MS = 15_000;

function checkLimit(value: number | undefined, fallback: number, name: string, min: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) throw new KiwiError('INVALID_INPUT', `createGatewayApp: limits.${name} must be an integer of at least ${min}, got ${String(value)}`);
  return value;
}

/** Errors of the app itself (no route, wrong method): a shape both OpenAI and Anthropic clients read. */
function appError(c: Context, status: 404 | 405 | 500, type: string, message: string) {
  return c.json({ type: 'error', error: { type, message, param: null, code: null } }, status);
}

/** What the edges serve; the app names it without importing hono. */
export type GatewayApp = Hono;

export function createGatewayApp(deps: GatewayAppDeps): GatewayApp {
  const maxBodyBytes = checkLimit(deps.limits?.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes', 1);
  const keepAliveMs = checkLimit(deps.limits?.keepAliveMs, DEFAULT_KEEP_ALIVE_MS, 'keepAliveMs', 0);
  const ids = new WeakMap<Context, string>();
  const requestId = (c: Context): string => ids.get(c) ?? pickRequestId(undefined);

  const routes: [method: string, path: string][] = [
    ['POST', '/v1/chat/completions'],
    ['POST', '/v1/messages'],
    ['POST', '/v1/responses'],
    ['GET', '/v1/models'],
    ['GET', '/healthz'],
    ...(deps.metrics === undefined && deps.kernel === undefined ? [] : ([['GET', '/metrics']] as [string, string][])),
    ...(deps.mcp === undefined ? [] : ([['GET, POST, DELETE', '/mcp']] as [string, string][])),
    ...(deps.kernel === undefined
      ? []
      : ([
          ['GET, POST', '/v0/executions'],
          ['GET', '/v0/executions/:id'],
          ['POST', '/v0/executions/:id/cancel'],
          ['POST', '/v0/executions/:id/signal'],
          ['GET', '/v0/executions/:id/events'],
          ['GET', '/v0/executions/:id/stream'],
          ['GET', '/v0/agents/stream'],
          ['POST', '/v0/agents/intent'],
          ['POST', '/v0/agents/step-result'],
          ['GET', '/v0/runners/stream'],
          ['POST', '/v0/runners/steps/:stepId/started'],
          ['POST', '/v0/runners/:id/results'],
          ['POST', '/v0/runners/:id/capabilities'],
          ['POST', '/v0/runners/:id/tools'],
          ['DELETE', '/v0/runners/:id'],
          ['GET', '/v0/tools'],
          ['GET', '/v0/health'],
          ['GET', '/v0/ready'],
        ] as [string, string][])),
    ...(deps.admin === undefined ? [] : ADMIN_ROUTES),
    ...(deps.admin === undefined || deps.console === undefined ? [] : ([['GET', '/ui'], ['GET', '/favicon.ico']] as [string, string][])),
  ];
  const listing = routes.map(([m, p]) => `${m} ${p}`).join(', ');

  const guard = deps.guard ?? createRequestGuard({ allowedHosts: DEFAULT_ALLOWED_HOSTS, allowedOrigins: [] });
  const app = new Hono();
  app.use('*', async (c, next) => {
    const id = pickRequestId(c.req.header(REQUEST_ID_HEADER));
    ids.set(c, id);
    c.header(REQUEST_ID_HEADER, id);
    await next();
    // A response written to Node directly carries the id already (and has no headers here to set).
    if (sentDirectly(c.res)) return;
    // A Response a handler built itself (the MCP transport's) may not have it, and may be immutable.
    if (c.res.headers.get(REQUEST_ID_HEADER) !== id) {
      try {
        c.res.headers.set(REQUEST_ID_HEADER, id);
      } catch {
        c.res = new Response(c.res.body, c.res);
        c.res.headers.set(REQUEST_ID_HEADER, id);
      }
    }
  });

  if (deps.tracing !== undefined) {
    const tracing = deps.tracing;
    app.use('*', async (c, next) => {
      // Ids in paths (executions, steps, runners) would make every span's name its own.
      const route = c.req.path.replace(/\/(?=[^/]*\d)[^/]{8,}(?=\/|$)/g, '/:id');
      const span = tracing.start(`${c.req.method} ${route}`, { 'http.request.method': c.req.method, 'url.path': c.req.path.slice(0, 256) });
      if (span.traceId !== undefined) c.header(TRACE_ID_HEADER, span.traceId);
      try {
        await span.run(next);
      } catch (error) {
        span.end(error);
        throw error;
      }
      span.setAttributes({ 'http.response.status_code': c.res.status });
      // A streamed answer is part of its request: the span ends when its body has.
      if (sentDirectly(c.res)) span.end();
      else c.res = trackBody(c.res, () => span.end());
    });
  }

  app.use('*', guard.middleware);

  const chat = { runLoop: deps.runLoop, maxBodyBytes, keepAliveMs, requestId, callerOf: guard.callerOf, ...(deps.onError === undefined ? {} : { onError: deps.onError }) };
  app.post('/v1/chat/completions', createChatHandler(openAiChatProtocol, chat));
  app.post('/v1/messages', createChatHandler(anthropicMessagesProtocol, chat));
  app.post('/v1/responses', createChatHandler(openAiResponsesProtocol, chat));
  app.get('/v1/models', async (c) => {
    const list = await deps.models();
    const down = unavailableHeader(list);
    return c.json(c.req.header('anthropic-version') === undefined ? openAiModelList(list) : anthropicModelList(list), 200, down === undefined ? {} : { [UNAVAILABLE_UPSTREAMS_HEADER]: down });
  });
  // Without a key only liveness is told: the rest names tools and upstreams.
  app.get('/healthz', (c) => c.json(guard.callerOf(c.req.raw) === undefined ? { status: 'ok' } : { status: 'ok', ...deps.health() }));
  if (deps.metrics !== undefined || deps.kernel !== undefined) {
    app.get('/metrics', createMetricsHandler({ ...(deps.metrics ? { json: deps.metrics } : {}), ...(deps.metricFamilies ? { families: deps.metricFamilies } : {}), ...(deps.kernel ? { kernel: deps.kernel } : {}) }));
  }
  const mcp = deps.mcp;
  if (mcp !== undefined) app.all('/mcp', (c) => mcp(c));
  if (deps.admin !== undefined) {
    // The console calls the admin API in this process as its logged-in person: same routes, same checks.
    const consoleCallers = new WeakMap<Request, Caller>();
    const adminApi = new Hono();
    mountAdminRoutes(adminApi, { ...deps.admin, requestId, callerOf: (r) => consoleCallers.get(r) ?? guard.callerOf(r), ...(deps.onError === undefined ? {} : { onError: deps.onError }) });
    app.route('/', adminApi);
    if (deps.console !== undefined) {
      const admin: AdminCall = async (caller, method, route, body) => {
        const request = new Request(`http://console${route}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
        consoleCallers.set(request, caller);
        const res = await adminApi.fetch(request);
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      mountConsole(app, { ...deps.console, admin, ...(deps.streamsEnd ? { until: deps.streamsEnd } : {}), ...(deps.kernelEvents ? { events: deps.kernelEvents } : {}) });
    }
  }
  if (deps.kernel !== undefined) mountKernelRoutes(app, { kernel: deps.kernel, requestId, callerOf: guard.callerOf, ...(deps.onError === undefined ? {} : { onError: deps.onError }), ...(deps.streamsEnd ? { streamsEnd: deps.streamsEnd } : {}), ...(deps.kernelEvents ? { events: deps.kernelEvents } : {}) });

  for (const [method, path] of routes.filter(([, p]) => p !== '/mcp')) {
    app.all(path, (c) => {
      c.header('allow', method);
      return appError(c, 405, 'invalid_request_error', `${c.req.method} is not allowed on ${path}; use ${method}`);
    });
  }
  app.notFound((c) => appError(c, 404, 'not_found_error', `There is no ${c.req.method} ${c.req.path} on this gateway; it serves ${listing}`));
  app.onError((error, c) => {
    const id = requestId(c);
    deps.onError?.(error, { requestId: id, route: c.req.path });
    return appError(c, 500, 'api_error', `The gateway failed on an internal error (request ${id}); retry, and report it with the request id if it persists`);
  });
  return app;
}
