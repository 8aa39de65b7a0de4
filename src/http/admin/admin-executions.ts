import type { Hono } from 'hono';
import { checkExecution, executionScope, seesSessions } from '../../clients/access.js';
import { KiwiError } from '../../base/errors.js';
import type { Kernel } from '../../kernel/open-kernel.js';
import { EXECUTION_STATUSES, type ExecutionStatus } from '../../kernel/types.js';
import { ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import { intParam, readId } from '../server/json-api.js';
import { wireEvent, wireExecution } from '../v0/kernel-wire.js';
import { redactedValue } from '../../audit/cap-audit-value.js';

/**
 * Executions for the people who run the gateway: the list (every client's, or one client's),
 * and one execution with its events, as the v0 API shows them to their owner.
 */

export function mountAdminExecutions(app: Hono, route: AdminRoute, kernel: () => Promise<Kernel>): void {
  app.get(
    `${ADMIN_PREFIX}/executions`,
    route('executions', async (c, caller) => {
      const status = c.req.query('status');
      if (status !== undefined && status !== '' && !(EXECUTION_STATUSES as readonly string[]).includes(status)) {
        throw new KiwiError('INVALID_INPUT', `invalid status ${JSON.stringify(status.slice(0, 40))}: use one of ${EXECUTION_STATUSES.join(', ')}`);
      }
      const client = c.req.query('client');
      const agentId = c.req.query('agent_id');
      const cursor = c.req.query('cursor');
      const scope = executionScope(caller);
      const page = await (await kernel()).executions.list({
        // One client's: within what the caller may see anyway (the admin and approver roles see all).
        scope: client === undefined || client === '' ? scope : scope.all ? { all: false, client: readId(client, 'client'), agents: [] } : scope,
        ...(status === undefined || status === '' ? {} : { status: status as ExecutionStatus }),
        ...(agentId === undefined || agentId === '' ? {} : { agentId: readId(agentId, 'agent id') }),
        ...(cursor === undefined || cursor === '' ? {} : { cursor: readId(cursor, 'cursor') }),
        limit: intParam(c.req.query('limit'), 50, 1, 200),
      });
      // The admin API shows whose each one is; the v0 API never does.
      return c.json({ executions: page.executions.map((e) => ({ id: e.id, status: e.status, client: e.client, agent_id: e.agentId, labels: e.labels, ...(e.usage === undefined ? {} : { usage: e.usage }), created_at: e.createdAt, updated_at: e.updatedAt })), next_cursor: page.nextCursor });
    }),
  );

  app.get(
    `${ADMIN_PREFIX}/executions/:id`,
    route('executions', async (c, caller) => {
      const k = await kernel();
      const owned = await k.executions.ownerOf(readId(c.req.param('id'), 'execution id'));
      checkExecution(caller, 'read', owned);
      const after = intParam(c.req.query('after_sequence'), 0, 0, Number.MAX_SAFE_INTEGER);
      const limit = intParam(c.req.query('limit'), 500, 1, 1000);
      const [execution, events] = await Promise.all([k.executions.get(owned.id), k.executions.events(owned.id, after, limit)]);
      const sessions = seesSessions(caller, owned.agentId);
      // Admins and approvers read other clients' executions here: what an agent put in them (its
      // input, a call's arguments, a result) is shown redacted as the audit log shows it. The
      // owner reads its own as stored through /v0; the gateway's own calls are stored redacted.
      const shown = { ...wireExecution(execution), client: execution.client };
      return c.json({ execution: redactedValue(shown), events: events.map((e) => redactedValue(wireEvent(e, { sessions }))), latest_sequence: events.at(-1)?.sequence ?? after });
    }),
  );
}
