import type { Hono } from 'hono';
import { KiwiError } from '../../base/errors.js';
import { toolRights, type RightTarget, type ToolRight } from '../../proxy/tool-rights.js';
import { previewResolution, type PreviewStep } from '../../resolver/resolution-preview.js';
import type { ResolverGates } from '../../resolver/resolver.js';
import type { SplitOptions } from '../../resolver/split-steps.js';
import type { Candidate, Resolution } from '../../resolver/types.js';
import { readKeyId } from './admin-keys.js';
import { keyRights } from './admin-policy.js';
import { ADMIN_MAX_BODY_BYTES, ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import type { AdminCatalog } from './admin-tools.js';
import { readObject } from '../server/json-api.js';

/**
 * The resolution playground: what the gateway would make of an intent, with nothing run. The
 * resolver is asked as a chat's intent asks it (split into steps the same way), and the answer
 * shows the candidates with their scores, the call and its arguments, the confidence beside the
 * resolver's threshold and gate, the decision, and whether the policy would let the caller (or
 * the key named by `client`) make the call. No tool runs, so nothing is audited or recorded.
 */

export interface AdminPlayground {
  /** The gateway's resolver (its `resolve`): retrieval and argument filling only. */
  resolve(text: string, options: { context?: string; signal?: AbortSignal }): Promise<Resolution>;
  /** How the gateway splits an intent into steps (the catalog's action words). */
  steps: SplitOptions;
  gates: ResolverGates;
}

/** An agent's intent is a sentence or two; the resolver reads no more than 4096 characters of it anyway. */
const MAX_INTENT_CHARS = 2000;
const MAX_CONTEXT_CHARS = 16_000;

export function mountAdminPlayground(app: Hono, route: AdminRoute, playground: AdminPlayground, catalog: AdminCatalog): void {
  app.post(
    `${ADMIN_PREFIX}/playground`,
    route('playground', async (c, caller) => {
      const body = await readObject(c, ADMIN_MAX_BODY_BYTES);
      const intent = readIntent(body['intent']);
      const context = body['context'];
      if (context !== undefined && (typeof context !== 'string' || context.length > MAX_CONTEXT_CHARS)) {
        throw new KiwiError('INVALID_INPUT', `context must be a text of at most ${MAX_CONTEXT_CHARS} characters: the recent conversation the intent refers to ("that file")`);
      }
      const client = body['client'];
      if (client !== undefined && typeof client !== 'string') throw new KiwiError('INVALID_INPUT', `client must be a key id (key_…) whose rights to check instead of yours; GET ${ADMIN_PREFIX}/keys lists them`);
      const key = client === undefined ? undefined : await keyRights(catalog, readKeyId(client));
      const right = key === undefined ? toolRights(catalog.policy, caller) : key.right;
      const signal = c.req.raw.signal;
      const preview = await previewResolution(intent, (text) => playground.resolve(text, { ...(context === undefined ? {} : { context }), signal }), playground.steps);
      const { gates } = playground;
      return c.json({
        intent,
        // Whose rights the policy answers are for: the caller's own, or the key's.
        rights_of: key === undefined ? { client: caller.client } : { client: key.record.client, key: key.record.id, ...(key.refused === undefined ? {} : { refused: key.refused }) },
        gates: { threshold: gates.threshold, call_gate: gates.callGate, target_precision: gates.targetPrecision, calibrated: gates.calibrated },
        plan: preview.kind,
        ...(preview.kind === 'refused' ? { refused: preview.reason, steps: [] } : { steps: preview.steps.map((s) => stepView(s, right, catalog)) }),
        ran: false,
      });
    }),
  );
}

function readIntent(value: unknown): string {
  if (typeof value !== 'string') throw new KiwiError('INVALID_INPUT', 'intent is required: the text an agent would write in [TOOL: …], e.g. "read_file {\\"path\\": \\"package.json\\"}" or "show the git log"');
  if (value.trim() === '') throw new KiwiError('INVALID_INPUT', 'intent is empty; say what should be done, e.g. "show the git log"');
  if (value.length > MAX_INTENT_CHARS) throw new KiwiError('INVALID_INPUT', `intent is ${value.length} characters, over the ${MAX_INTENT_CHARS} the playground takes; an agent's intent is a sentence or two`);
  return value;
}

function stepView(step: PreviewStep, right: (target: RightTarget) => ToolRight, catalog: AdminCatalog): Record<string, unknown> {
  const r = step.resolution;
  const target = (c: { tool: string; item?: Candidate['item'] }): RightTarget => {
    const tool = c.item === undefined ? catalog.tools.get(c.tool) : undefined;
    return { id: c.tool, ...(c.item === undefined ? {} : { item: c.item }), ...(tool === undefined ? {} : { tool }) };
  };
  // The call's rights, or (asked back) those of the tool the agent is asked about.
  const called = r.status === 'resolved' ? r.call : step.decision === 'asked_back' ? r.candidates[0] : undefined;
  return {
    intent: step.intent,
    decision: step.decision,
    ...(r.status === 'resolved'
      ? { call: { tool: r.call.tool, ...(r.call.item ? { item: r.call.item } : {}), arguments: r.call.arguments } }
      : { reason: r.reason, ...(r.stop ? { stop: r.stop } : {}), missing: r.missing, ...(r.found ? { found: r.found } : {}) }),
    confidence: round(r.confidence),
    ...(called === undefined ? {} : { policy: { tool: called.tool, ...right(target(called)) } }),
    candidates: r.candidates.map((c) => ({
      tool: c.tool,
      ...(c.item ? { item: c.item } : {}),
      score: round(c.score),
      ...(c.vectorScore === undefined ? {} : { vector_score: round(c.vectorScore) }),
      ...(c.textScore === undefined ? {} : { text_score: round(c.textScore) }),
      allowed: right(target(c)).allowed,
    })),
    notes: r.notes,
    timings_ms: { embed: round(r.timings.embedMs), search: round(r.timings.searchMs), fill: round(r.timings.fillMs), total: round(r.timings.totalMs) },
  };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
