import type { Hono } from 'hono';
import { argumentsDigest } from '../../base/arguments-digest.js';
import { redactedValue } from '../../audit/cap-audit-value.js';
import { checkExecution } from '../../clients/access.js';
import { isKiwiError, KiwiError } from '../../base/errors.js';
import type { Kernel } from '../../kernel/open-kernel.js';
import type { WaitingApproval } from '../../kernel/waiting-approvals.js';
import type { Caller } from '../../policy/caller.js';
import { ADMIN_MAX_BODY_BYTES, ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import { intParam, readId, readObject } from '../server/json-api.js';

/**
 * The approval queue: every call that waits for a person, with what it will do (tool,
 * arguments and their digest), since when and until when; and the answer to one. A grant names
 * the arguments' digest the person saw, so that it grants exactly that call (kernel/signals.ts
 * refuses a grant for other arguments). The answer is the signal `step.approve`, as `kiwi
 * approvals` sends it, checked by clients/access.ts: nobody answers their own client's calls.
 */

const MAX_LISTED = 200;
const MAX_REASON_CHARS = 2000;

export function mountAdminApprovals(app: Hono, route: AdminRoute, kernel: () => Promise<Kernel>): void {
  app.get(
    `${ADMIN_PREFIX}/approvals`,
    route('approvals', async (c, caller) => {
      const limit = intParam(c.req.query('limit'), 50, 1, MAX_LISTED);
      const waiting = await (await kernel()).approvals.waiting(limit + 1);
      return c.json({ approvals: waiting.slice(0, limit).map((w) => shownApproval(w, caller)), more: waiting.length > limit });
    }),
  );

  app.post(
    `${ADMIN_PREFIX}/approvals/:stepId`,
    route('approvals', async (c, caller) => {
      const stepId = readId(c.req.param('stepId'), 'step id');
      const body = await readObject(c, ADMIN_MAX_BODY_BYTES);
      const decision = body['decision'];
      if (decision !== 'grant' && decision !== 'deny') throw new KiwiError('INVALID_INPUT', 'decision must be "grant" or "deny"');
      const reason = body['reason'];
      if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON_CHARS)) throw new KiwiError('INVALID_INPUT', `reason must be a text of at most ${MAX_REASON_CHARS} characters`);
      const k = await kernel();
      const waiting = await k.approvals.of(stepId);
      if (waiting === undefined) throw notWaiting(stepId);
      // One the caller may not see is, to it, one that does not exist.
      checkExecution(caller, 'approve', { id: waiting.executionId, client: waiting.client, agentId: waiting.agentId });
      const digest = argumentsDigest(waiting.arguments);
      if (decision === 'grant') {
        const seen = body['arguments_digest'];
        if (typeof seen !== 'string') throw new KiwiError('INVALID_INPUT', `a grant names the arguments it is given for: send arguments_digest as GET ${ADMIN_PREFIX}/approvals showed it`);
        if (seen !== digest) throw new KiwiError('CONFLICT', `the call of step ${stepId} is not the one you saw (its arguments' digest is ${digest}); look at it again before granting`);
      }
      const payload = {
        step_id: stepId,
        approved: decision === 'grant',
        decided_by: caller.client,
        ...(decision === 'grant' ? { tool_id: waiting.toolId, arguments_digest: digest } : {}),
        ...(typeof reason === 'string' && reason !== '' ? { reason } : {}),
      };
      try {
        await k.signals.send(waiting.executionId, { signalType: 'step.approve', payload, sender: caller.client });
      } catch (error) {
        // Answered or ended meanwhile.
        if (isKiwiError(error) && error.code === 'CONFLICT') throw notWaiting(stepId);
        throw error;
      }
      return c.json({ step_id: stepId, execution_id: waiting.executionId, decision, tool_id: waiting.toolId });
    }),
  );
}

function shownApproval(w: WaitingApproval, caller: Caller): Record<string, unknown> {
  let answerable = true;
  try {
    checkExecution(caller, 'approve', { id: w.executionId, client: w.client, agentId: w.agentId });
  } catch {
    answerable = false;
  }
  return {
    step_id: w.stepId,
    execution_id: w.executionId,
    client: w.client,
    agent_id: w.agentId,
    tool_id: w.toolId,
    // Shown redacted; the digest is of the arguments as the kernel keeps them, which its grant check compares.
    arguments: redactedValue(w.arguments),
    arguments_digest: argumentsDigest(w.arguments),
    since: w.since,
    expires: w.expires,
    answerable,
  };
}

function notWaiting(stepId: string): KiwiError {
  return new KiwiError('NOT_FOUND', `no call waits for approval as step ${stepId.slice(0, 80)}: it was answered, it expired, or it never asked (GET ${ADMIN_PREFIX}/approvals lists those that wait)`);
}
