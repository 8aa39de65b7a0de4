import type { Context, Hono } from 'hono';
import type { AuditQuery } from '../../audit/audit-query.js';
import { checkAdminister } from '../../clients/access.js';
import { LOCAL_CALLER } from '../../clients/client-auth.js';
import type { Kernel } from '../../kernel/open-kernel.js';
import type { Caller } from '../../policy/caller.js';
import { mountAdminApprovals } from './admin-approvals.js';
import { mountAdminAudit } from './admin-audit.js';
import { mountAdminExecutions } from './admin-executions.js';
import { mountAdminKeys, type AdminKeys } from './admin-keys.js';
import { mountAdminPlayground, type AdminPlayground } from './admin-playground.js';
import { mountAdminPolicy } from './admin-policy.js';
import { ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import { mountAdminThreads, type AdminThreads } from './admin-threads.js';
import { mountAdminTools, type AdminCatalog } from './admin-tools.js';
import { mountAdminUsage, type AdminUsage } from './admin-usage.js';
import { apiError } from '../server/json-api.js';

/**
 * The admin API under /admin/v1, for the people who run the gateway (and the console, which
 * reads it): keys, approvals, executions, the audit log, threads, counters, usage and budgets, a
 * key's effective policy, the tool catalog and the resolution playground. JSON, with the kernel
 * API's errors (`{"error", "code"}`). Every route names its area, and clients/access.ts decides
 * who may use it: admin keys everything, approver keys approvals and executions. The request
 * guard has admitted the key already (or the keyless local operator on loopback, who has every
 * role).
 */

export interface AdminRouteDeps {
  requestId(c: Context): string;
  /** The client key that sent a request; absent (an app without keys): the local operator. */
  callerOf?: (request: Request) => Caller | undefined;
  /** Told about failures that are not KiwiErrors (bugs); the client sees "internal error". */
  onError?: (error: unknown, info: { requestId: string; route: string }) => void;
  /** The kernel (its database), opened on first use. */
  kernel(): Promise<Kernel>;
  keys: AdminKeys;
  /** What clients used and what their budgets leave. */
  usage: AdminUsage;
  /** The tool catalog, the project's policy and the keys' rights. */
  catalog: AdminCatalog;
  /** The resolver, for intents tried without running anything. */
  playground: AdminPlayground;
  /** The gateway's counters (prefetch, resolution), as GET /metrics serves them. */
  counters(): Record<string, unknown>;
  /** The audit log (its files, or the table gateways sharing a Postgres write), a page at a time. */
  audit: AuditQuery;
  /** The directive threads (their files, or Postgres's). */
  threads: AdminThreads;
}

export function mountAdminRoutes(app: Hono, deps: AdminRouteDeps): void {
  const route: AdminRoute = (area, handler) => async (c) => {
    try {
      const caller = deps.callerOf?.(c.req.raw) ?? LOCAL_CALLER;
      checkAdminister(caller, area);
      return await handler(c, caller);
    } catch (error) {
      return apiError(c, error, (bug) => deps.onError?.(bug, { requestId: deps.requestId(c), route: c.req.path }));
    }
  };
  mountAdminKeys(app, route, deps.keys);
  mountAdminApprovals(app, route, deps.kernel);
  mountAdminExecutions(app, route, deps.kernel);
  mountAdminAudit(app, route, deps.audit);
  mountAdminThreads(app, route, deps.threads);
  mountAdminUsage(app, route, deps.usage);
  mountAdminPolicy(app, route, deps.catalog);
  mountAdminTools(app, route, deps.catalog);
  mountAdminPlayground(app, route, deps.playground, deps.catalog);
  app.get(`${ADMIN_PREFIX}/counters`, route('counters', async (c) => c.json(deps.counters())));
}

/** The admin API's routes, for the app's list of what it serves and its 405s. */
export const ADMIN_ROUTES: [method: string, path: string][] = [
  ['GET, POST', `${ADMIN_PREFIX}/keys`],
  ['DELETE', `${ADMIN_PREFIX}/keys/:id`],
  ['GET', `${ADMIN_PREFIX}/approvals`],
  ['POST', `${ADMIN_PREFIX}/approvals/:stepId`],
  ['GET', `${ADMIN_PREFIX}/executions`],
  ['GET', `${ADMIN_PREFIX}/executions/:id`],
  ['GET', `${ADMIN_PREFIX}/audit`],
  ['GET', `${ADMIN_PREFIX}/threads`],
  ['GET', `${ADMIN_PREFIX}/threads/:id`],
  ['GET', `${ADMIN_PREFIX}/counters`],
  ['GET', `${ADMIN_PREFIX}/usage`],
  ['GET', `${ADMIN_PREFIX}/keys/:id/policy`],
  ['GET', `${ADMIN_PREFIX}/tools`],
  ['POST', `${ADMIN_PREFIX}/playground`],
];
