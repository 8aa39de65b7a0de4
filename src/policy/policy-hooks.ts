/**
 * `hooks:` and `approvals:` of `.ai/config/policy.yaml`. A hook is a `when` condition (CEL, or
 * Kiwi's `and`/`or`/`not`) and exactly one action: `deny: why`, `require_approval: true`,
 * `annotate: text`, `directive: name` (or `{name, inputs, steer, timeout_s, retries}`),
 * `webhook: https://…`, or a steering decision (`retry: {max}`, `skip`, `fail`, `abort`: why,
 * `continue: true`); `fallthrough: true` lets the hooks after it act too. Conditions are
 * compiled here, so a mistake is reported with the file's line and column. Webhooks are allowed
 * here and not in directives: the policy's author is the one who may send the gateway's events
 * to another machine.
 */
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { createConditionCompiler, type ConditionSite } from '../hooks/condition.js';
import type { LoadedHook } from '../hooks/hook-runner.js';
import { DEFAULT_STEER_TIMEOUT_MS, MAX_RETRIES, type HookAction } from '../hooks/hook-types.js';
import type { YamlSource } from '../registry/yaml-source.js';

const MAX_HOOKS = 100;
/** An answer that does not come within this is a denial. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60_000;

const ACTIONS = ['deny', 'require_approval', 'annotate', 'directive', 'webhook', 'retry', 'skip', 'fail', 'abort', 'continue'] as const;

const text = z.string().min(1, 'must not be empty');
const retries = z.number().int().min(1, 'must be at least 1').max(MAX_RETRIES, `must be at most ${MAX_RETRIES}`);
const webhookUrl = text.refine(isWebhookUrl, { message: 'must be an http:// or https:// address without credentials (e.g. "https://hooks.example.com/kiwi")' });

export const policyHookSchema = z
  .strictObject({
    when: text,
    deny: text.optional(),
    require_approval: z.literal(true, 'must be true (leave it out otherwise)').optional(),
    annotate: text.optional(),
    directive: z
      .union([
        text,
        z.strictObject({
          name: text,
          inputs: z.record(text, z.string()).optional(),
          steer: z.boolean().optional(),
          timeout_s: z.number().int().min(1, 'must be at least 1').max(600, 'must be at most 600 (ten minutes)').optional(),
          retries: retries.optional(),
        }),
      ])
      .optional()
      .refine((d) => typeof d !== 'object' || d.steer === true || (d.timeout_s === undefined && d.retries === undefined), { message: 'timeout_s and retries go with `steer: true` only' }),
    webhook: webhookUrl.optional(),
    retry: z.strictObject({ max: retries }).optional(),
    skip: text.optional(),
    fail: text.optional(),
    abort: text.optional(),
    continue: z.literal(true, 'must be true (leave it out otherwise)').optional(),
    fallthrough: z.boolean().optional(),
  })
  .refine((h) => ACTIONS.filter((a) => h[a] !== undefined).length === 1, { message: `must have exactly one action: ${ACTIONS.join(', ')}` });

export const policyHooksSchema = z.array(policyHookSchema).max(MAX_HOOKS, `holds more than the ${MAX_HOOKS} hooks allowed`);

export const approvalsSchema = z.strictObject({
  tools: z.array(text).optional(),
  timeout_s: z.number().int().min(1, 'must be at least 1').max(86_400, 'must be at most 86400 (a day)').optional(),
});


type PolicyHookYaml = z.infer<typeof policyHookSchema>;

/** Which calls wait for a person, and for how long. */
export interface ApprovalRules {
  /** Globs over tool ids. */
  tools: string[];
  timeoutMs: number;
}

export function toApprovalRules(raw: z.infer<typeof approvalsSchema> | undefined): ApprovalRules {
  return { tools: raw?.tools ?? [], timeoutMs: (raw?.timeout_s ?? DEFAULT_APPROVAL_TIMEOUT_MS / 1000) * 1000 };
}

/** Compiles each hook's condition. Throws INVALID_POLICY naming the file, line and column. */
export function loadPolicyHooks(hooks: readonly PolicyHookYaml[], source: YamlSource | undefined, file: string): LoadedHook[] {
  const compiler = createConditionCompiler();
  return hooks.map((hook, i) => {
    const site: ConditionSite = { file, ...(source?.scalarStart(['hooks', i, 'when']) ?? { line: 1 }) };
    let condition;
    try {
      condition = compiler.compileCondition(hook.when, site);
    } catch (error) {
      if (error instanceof KiwiError) throw new KiwiError('INVALID_POLICY', `${error.message} (field \`hooks[${i}].when\`)`, { cause: error });
      throw error;
    }
    return { file, line: site.line, condition, action: toAction(hook), ...(hook.fallthrough === true ? { fallthrough: true } : {}) };
  });
}

function toAction(hook: PolicyHookYaml): HookAction {
  if (hook.deny !== undefined) return { kind: 'deny', reason: hook.deny };
  if (hook.require_approval !== undefined) return { kind: 'require_approval' };
  if (hook.annotate !== undefined) return { kind: 'annotate', text: hook.annotate };
  if (hook.webhook !== undefined) return { kind: 'webhook', url: hook.webhook };
  if (hook.retry !== undefined) return { kind: 'steer', decision: 'retry', max: hook.retry.max };
  if (hook.skip !== undefined) return { kind: 'steer', decision: 'skip', reason: hook.skip };
  if (hook.fail !== undefined) return { kind: 'steer', decision: 'fail', reason: hook.fail };
  if (hook.abort !== undefined) return { kind: 'steer', decision: 'abort', reason: hook.abort };
  if (hook.continue !== undefined) return { kind: 'steer', decision: 'continue' };
  const d = hook.directive as NonNullable<PolicyHookYaml['directive']>;
  if (typeof d === 'string') return { kind: 'directive', name: d, inputs: {} };
  const steer = d.steer === true ? { steer: { timeoutMs: (d.timeout_s ?? DEFAULT_STEER_TIMEOUT_MS / 1000) * 1000, retries: d.retries ?? 1 } } : {};
  return { kind: 'directive', name: d.name, inputs: d.inputs ?? {}, ...steer };
}

function isWebhookUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
}
