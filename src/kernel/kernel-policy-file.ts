import { createHash } from 'node:crypto';
import { z } from 'zod';
import { checkConfig, loadYamlConfig, type CheckedConfig } from '../registry/yaml-config.js';
import { compileArgumentPattern, NO_POLICY, toolIdMatcher, type ArgumentPredicate, type KernelPolicy, type PolicyRule } from './kernel-policy.js';
import { parseSchedule } from './schedule.js';

/**
 * `.ai/config/kernel-policy.yaml`: Rebuno's policy format (§15.2) for the kernel's `invoke_tool`.
 * Unknown keys are ignored, as Rebuno does; everything it refuses at load is refused here, with
 * the rule and the field named. A missing file is NO_POLICY (nothing runs).
 */

const MAX_BYTES = 256 * 1024;

const predicate = z.looseObject({
  field: z.string().min(1, 'needs a field'),
  pattern: z.string().optional(),
  one_of: z.array(z.string()).optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  max_length: z.number().int().nonnegative().optional(),
  required: z.boolean().optional(),
});
const decision = z.enum(['allow', 'deny', 'require_approval'], 'must be allow, deny or require_approval');
const rule = z.looseObject({
  id: z.string().min(1, 'needs an id'),
  priority: z.number().int('must be a whole number'),
  when: z
    .looseObject({
      action: z.string().optional(),
      tool_id: z.string().optional(),
      tool_ids: z.array(z.string()).optional(),
      agent_id: z.string().optional(),
      agent_ids: z.array(z.string()).optional(),
      labels: z.record(z.string(), z.string()).optional(),
      arguments: z.array(predicate).optional(),
      min_step_count: z.number().int().min(0, 'must be 0 or more').optional(),
      min_duration_ms: z.number().int().positive('must be more than 0').optional(),
      schedule: z.string().optional(),
    })
    .nullish(),
  then: z.looseObject({ decision, reason: z.string().optional(), timeout_ms: z.number().int().nonnegative().optional() }),
  rate_limit: z.looseObject({ max: z.number().int().positive('must be more than 0'), window: z.string() }).optional(),
});
const file = z.looseObject({
  rules: z.array(rule).nullish(),
  default: z.looseObject({ decision, reason: z.string().optional() }).optional(),
});

export async function loadKernelPolicy(path: string): Promise<KernelPolicy> {
  const loaded = await loadYamlConfig(path, { ...spec(path), maxBytes: MAX_BYTES });
  if (loaded === undefined) return NO_POLICY;
  return { ...compile(loaded), version: `sha256:${createHash('sha256').update(loaded.text).digest('hex').slice(0, 16)}` };
}

/** A policy given as data (`where` names it in messages); compiled as a file's would be. */
export function compileKernelPolicy(data: unknown, where: string): KernelPolicy {
  return compile(checkConfig(data, spec(where)));
}

const spec = (shown: string) => ({ shown, schema: file, code: 'INVALID_POLICY' as const });

function compile({ data, fail: failAt }: CheckedConfig<z.output<typeof file>>): KernelPolicy {
  const ids = new Set<string>();
  const priorities = new Map<number, string>();
  const rules: PolicyRule[] = (data.rules ?? []).map((r, i) => {
    const fail = (message: string): never => failAt(['rules', i], `rule ${JSON.stringify(r.id)}: ${message}`);
    if (ids.has(r.id)) fail(`another rule is already named ${JSON.stringify(r.id)}`);
    ids.add(r.id);
    const taken = priorities.get(r.priority);
    if (taken !== undefined) fail(`priority ${r.priority} is also rule ${taken}'s; priorities must differ`);
    priorities.set(r.priority, r.id);
    const w = r.when ?? {};
    const toolPatterns = [...(w.tool_id === undefined ? [] : [w.tool_id]), ...(w.tool_ids ?? [])];
    for (const pattern of toolPatterns) {
      // Such a rule could never match: the kernel denies ids outside the alphabet before any rule (kernel-policy.ts).
      const odd = [...pattern].find((c) => !/^[A-Za-z0-9_.\-*?[\]^\\/]$/.test(c));
      if (odd !== undefined) {
        const code = `U+${(odd.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
        fail(`when.tool_id ${JSON.stringify(pattern)} contains ${code}, outside the tool id alphabet (A-Z, a-z, 0-9, "_", "." and "-"); no tool can match it`);
      }
    }
    const agents = [...(w.agent_id === undefined ? [] : [w.agent_id]), ...(w.agent_ids ?? [])];
    const predicates = (w.arguments ?? []).map((p, j): ArgumentPredicate => {
      const constraints = [p.pattern, p.one_of, p.min, p.max, p.max_length, p.required].filter((c) => c !== undefined);
      if (constraints.length === 0) fail(`when.arguments[${j}] (${p.field}) has no constraint: give pattern, one_of, min, max, max_length or required`);
      let pattern: ((value: string) => boolean) | undefined;
      if (p.pattern !== undefined) {
        const compiled = compileArgumentPattern(p.pattern);
        if (typeof compiled === 'string') fail(`when.arguments[${j}].pattern: ${compiled}`);
        else pattern = compiled;
      }
      return {
        field: p.field,
        ...(pattern === undefined ? {} : { pattern }),
        ...(p.one_of === undefined ? {} : { oneOf: p.one_of }),
        ...(p.min === undefined ? {} : { min: p.min }),
        ...(p.max === undefined ? {} : { max: p.max }),
        ...(p.max_length === undefined ? {} : { maxLength: p.max_length }),
        ...(p.required === undefined ? {} : { required: p.required }),
      };
    });
    let schedule: ((at: Date) => boolean) | undefined;
    if (w.schedule !== undefined) {
      const s = parseSchedule(w.schedule);
      if (typeof s === 'string') fail(`when.schedule: ${s}`);
      else schedule = s;
    }
    let rateLimit: PolicyRule['rateLimit'];
    if (r.rate_limit !== undefined) {
      const windowMs = goDurationMs(r.rate_limit.window);
      if (windowMs === undefined || windowMs <= 0) fail(`rate_limit.window ${JSON.stringify(r.rate_limit.window)} is not a duration: write e.g. 30s, 1m or 1h30m`);
      rateLimit = { max: r.rate_limit.max, windowMs: windowMs as number, window: r.rate_limit.window };
    }
    return {
      id: r.id,
      priority: r.priority,
      when: {
        ...(w.action === undefined ? {} : { action: w.action }),
        ...(toolPatterns.length === 0 ? {} : { toolIds: toolPatterns.map(toolIdMatcher) }),
        ...(agents.length === 0 ? {} : { agentIds: agents }),
        ...(w.labels === undefined ? {} : { labels: w.labels }),
        ...(predicates.length === 0 ? {} : { arguments: predicates }),
        ...(w.min_step_count === undefined ? {} : { minStepCount: w.min_step_count }),
        ...(w.min_duration_ms === undefined ? {} : { minDurationMs: w.min_duration_ms }),
        ...(schedule === undefined ? {} : { schedule }),
      },
      then: { decision: r.then.decision, ...(r.then.reason === undefined ? {} : { reason: r.then.reason }), ...(r.then.timeout_ms ? { timeoutMs: r.then.timeout_ms } : {}) },
      ...(rateLimit === undefined ? {} : { rateLimit }),
    };
  });
  rules.sort((a, b) => a.priority - b.priority);
  const d = data.default;
  return { rules, defaultDecision: { decision: d?.decision ?? 'deny', reason: d?.reason ?? 'No explicit allow rule matched' } };
}

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration (`500ms`, `30s`, `1m`, `1h30m`) in milliseconds, or undefined. */
export function goDurationMs(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, , unit] of text.matchAll(/(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(n) * (UNIT_MS[unit as string] as number);
  return total;
}
