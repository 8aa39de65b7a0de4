import { LRUCache } from 'lru-cache';
import { compilePattern, MAX_MATCHED_CHARS } from '../registry/string-pattern.js';

/**
 * The kernel's policy (§15): rules in priority order, the first that matches decides; no match
 * is the default. Evaluated on every `invoke_tool`. A rule that allows may carry a rate limit,
 * counted per agent and tool over a sliding window of the calls it let through.
 */

export type Decision = 'allow' | 'deny' | 'require_approval';

export interface ArgumentPredicate {
  field: string;
  pattern?: (value: string) => boolean;
  oneOf?: readonly string[];
  min?: number;
  max?: number;
  maxLength?: number;
  required?: boolean;
}

export interface PolicyRule {
  id: string;
  priority: number;
  when: {
    action?: string;
    toolIds?: readonly ((toolId: string) => boolean)[];
    agentIds?: readonly string[];
    labels?: Readonly<Record<string, string>>;
    arguments?: readonly ArgumentPredicate[];
    minStepCount?: number;
    minDurationMs?: number;
    schedule?: (at: Date) => boolean;
  };
  then: { decision: Decision; reason?: string; timeoutMs?: number };
  rateLimit?: { max: number; windowMs: number; window: string };
}

export interface KernelPolicy {
  rules: readonly PolicyRule[];
  defaultDecision: { decision: Decision; reason: string };
}

export interface PolicyInput {
  toolId: string;
  agentId: string;
  labels: Readonly<Record<string, string>>;
  arguments: unknown;
  stepCount: number;
  durationMs: number;
  at: Date;
}

export interface PolicyVerdict {
  decision: Decision;
  reason: string;
  ruleId: string;
  timeoutMs?: number;
  rateLimit?: PolicyRule['rateLimit'];
}

/** No policy file: nothing runs until rules allow it (the house default, and Rebuno's server mode). */
export const NO_POLICY: KernelPolicy = { rules: [], defaultDecision: { decision: 'deny', reason: 'No policy engine configured: write rules in .ai/config/kernel-policy.yaml' } };

export function evaluatePolicy(policy: KernelPolicy, input: PolicyInput): PolicyVerdict {
  for (const rule of policy.rules) {
    if (!matches(rule, input)) continue;
    return {
      decision: rule.then.decision,
      reason: rule.then.reason ?? `rule ${rule.id}`,
      ruleId: rule.id,
      ...(rule.then.timeoutMs === undefined ? {} : { timeoutMs: rule.then.timeoutMs }),
      ...(rule.rateLimit === undefined ? {} : { rateLimit: rule.rateLimit }),
    };
  }
  return policy === NO_POLICY ? { ...policy.defaultDecision, ruleId: 'secure-default' } : { ...policy.defaultDecision, ruleId: 'default' };
}

function matches(rule: PolicyRule, input: PolicyInput): boolean {
  const w = rule.when;
  if (w.action !== undefined && w.action !== 'tool.invoke') return false;
  if (w.toolIds !== undefined && !w.toolIds.some((m) => m(input.toolId))) return false;
  if (w.agentIds !== undefined && !w.agentIds.includes(input.agentId)) return false;
  if (w.labels !== undefined && !Object.entries(w.labels).every(([k, v]) => (input.labels[k] ?? '') === v)) return false;
  if (w.minStepCount !== undefined && input.stepCount < w.minStepCount) return false;
  if (w.minDurationMs !== undefined && input.durationMs < w.minDurationMs) return false;
  if (w.schedule !== undefined && !w.schedule(input.at)) return false;
  if (w.arguments !== undefined) {
    const args = input.arguments ?? {};
    if (typeof args !== 'object' || Array.isArray(args)) return false;
    if (!w.arguments.every((p) => predicateHolds(p, (args as Record<string, unknown>)[p.field]))) return false;
  }
  return true;
}

function predicateHolds(p: ArgumentPredicate, value: unknown): boolean {
  if (value === undefined) return p.required !== true;
  if (p.required === true && value === '') return false;
  if (p.pattern !== undefined && (typeof value !== 'string' || value.length > MAX_MATCHED_CHARS || !p.pattern(value))) return false;
  if (p.oneOf !== undefined && (typeof value !== 'string' || !p.oneOf.includes(value))) return false;
  if (p.min !== undefined && (typeof value !== 'number' || value < p.min)) return false;
  if (p.max !== undefined && (typeof value !== 'number' || value > p.max)) return false;
  if (p.maxLength !== undefined && (typeof value !== 'string' || [...value].length > p.maxLength)) return false;
  return true;
}

/** RE2, unanchored (§15.3); a pattern RE2 cannot compile is a load error. */
export function compileArgumentPattern(source: string): ((value: string) => boolean) | string {
  const compiled = compilePattern(source);
  return compiled.ok ? compiled.test : compiled.reason;
}

/**
 * Go's `path.Match` (§15.3): `*` any run of characters but `/`, `?` one such character, `[…]`
 * a class (`[^…]` negated), `\` quotes the next character. A malformed pattern compares exactly.
 */
export function toolIdMatcher(pattern: string): (toolId: string) => boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === '*') source += '[^/]*';
    else if (ch === '?') source += '[^/]';
    else if (ch === '\\') {
      const next = pattern[++i];
      if (next === undefined) return (id) => id === pattern;
      source += escapeRegExp(next);
    } else if (ch === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) return (id) => id === pattern;
      let body = pattern.slice(i + 1, end);
      const negated = body.startsWith('^');
      if (negated) body = body.slice(1);
      source += `[${negated ? '^' : ''}${body.replace(/[\\\]]/g, '\\$&')}]`;
      i = end;
    } else source += escapeRegExp(ch);
  }
  let re: RegExp;
  try {
    re = new RegExp(`^${source}$`, 'u');
  } catch {
    return (id) => id === pattern;
  }
  return (id) => re.test(id);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/**
 * Calls each rule with a rate limit let through, per agent and tool, over its sliding window.
 * In memory: a gateway restart forgets them, as Rebuno's does.
 */
export interface RateLimiter {
  /** True, and counted, when one more call fits. */
  admit(key: string, limit: NonNullable<PolicyRule['rateLimit']>, at: number): boolean;
}

export function createRateLimiter(): RateLimiter {
  // Bounded: the oldest agent-and-tool pairs are forgotten first.
  const calls = new LRUCache<string, number[]>({ max: 10_000 });
  return {
    admit(key, limit, at) {
      const recent = (calls.get(key) ?? []).filter((t) => t > at - limit.windowMs);
      if (recent.length >= limit.max) {
        calls.set(key, recent);
        return false;
      }
      recent.push(at);
      calls.set(key, recent);
      return true;
    },
  };
}
