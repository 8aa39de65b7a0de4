import { LRUCache } from 'lru-cache';
import { compilePattern, MAX_MATCHED_CHARS } from '../registry/string-pattern.js';
import { checkToolName } from '../registry/tool-name.js';

/**
 * The kernel's policy (§15): rules in priority order, the first that matches decides; no match
 * is the default. Evaluated on every `invoke_tool`. A rule that allows may carry a rate limit,
 * counted per agent and tool over a sliding window of the calls it let through.
 *
 * Tool names (issue 22: `Deploy_prod`, `deploy-prod`, `deploy_prod` with a zero-width space and
 * `dеploy_prod` with a Cyrillic `е` all passed a rule written for `deploy_prod`), decided:
 * - A tool id outside the tool id alphabet `[A-Za-z0-9_.-]` (DESIGN §3; the registry's own check,
 *   registry/tool-name.ts) is denied before any rule is read, whatever the rules and the default
 *   say, with the offending character named (rule id `tool-id`). No Unicode means no look-alike,
 *   invisible or mixed-script name to catch: a list of confusables is never complete, an alphabet
 *   is. Rebuno takes any string; no tool of ours or a runner's needs more than this.
 * - Within the alphabet, rules match names folded: case does not count, and `-` is `_`. So a rule
 *   for `deploy_prod` also decides `Deploy-Prod`, whether it denies or allows: two tools whose
 *   names differ only so are one name to the policy, and should be named apart by more.
 *   Character classes (`[…]`) are compared lower-cased, with `-` in them still a range.
 */

export type KernelVerdict = 'allow' | 'deny' | 'require_approval';

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
  then: { decision: KernelVerdict; reason?: string; timeoutMs?: number };
  rateLimit?: { max: number; windowMs: number; window: string };
}

export interface KernelPolicy {
  rules: readonly PolicyRule[];
  defaultDecision: { decision: KernelVerdict; reason: string };
  /** A digest of the policy file's text: an approval asked under one version is not granted under another. */
  version?: string;
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
  decision: KernelVerdict;
  reason: string;
  ruleId: string;
  timeoutMs?: number;
  rateLimit?: PolicyRule['rateLimit'];
}

/** No policy file: nothing runs until rules allow it (the house default, and Rebuno's server mode). */
export const NO_POLICY: KernelPolicy = { rules: [], defaultDecision: { decision: 'deny', reason: 'No policy engine configured: write rules in .ai/config/kernel-policy.yaml' } };

export function evaluatePolicy(policy: KernelPolicy, input: PolicyInput): PolicyVerdict {
  const problem = toolIdProblem(input.toolId);
  if (problem !== undefined) return { decision: 'deny', reason: problem, ruleId: 'tool-id' };
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

/** Why a tool id is refused before any rule is read (see the header), or undefined for a good one. */
export function toolIdProblem(toolId: string): string | undefined {
  if (/^[A-Za-z0-9_.-]+$/.test(toolId)) return undefined;
  const check = checkToolName(toolId);
  return check.ok ? undefined : check.reason;
}

/** A tool id as rules compare it: lower case, `-` read as `_`. */
export function foldToolId(toolId: string): string {
  return toolId.toLowerCase().replaceAll('-', '_');
}

/**
 * Go's `path.Match` (§15.3): `*` any run of characters but `/`, `?` one such character, `[…]`
 * a class (`[^…]` negated), `\` quotes the next character. A malformed pattern compares exactly.
 * Both sides are folded (`foldToolId`) first.
 */
export function toolIdMatcher(pattern: string): (toolId: string) => boolean {
  const exact = (id: string): boolean => foldToolId(id) === foldToolId(pattern);
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === '*') source += '[^/]*';
    else if (ch === '?') source += '[^/]';
    else if (ch === '\\') {
      const next = pattern[++i];
      if (next === undefined) return exact;
      source += escapeRegExp(foldToolId(next));
    } else if (ch === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) return exact;
      let body = pattern.slice(i + 1, end).toLowerCase();
      const negated = body.startsWith('^');
      if (negated) body = body.slice(1);
      source += `[${negated ? '^' : ''}${body.replace(/[\\\]]/g, '\\$&')}]`;
      i = end;
    } else source += escapeRegExp(foldToolId(ch));
  }
  let re: RegExp;
  try {
    re = new RegExp(`^${source}$`, 'u');
  } catch {
    return exact;
  }
  return (id) => re.test(foldToolId(id));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/**
 * Calls each rule with a rate limit let through, per agent and tool, over its sliding window.
 * In memory: a gateway restart forgets them, as Rebuno's does.
 */
export interface RuleRateLimiter {
  /** True, and counted, when one more call fits. */
  admit(key: string, limit: NonNullable<PolicyRule['rateLimit']>, at: number): boolean;
}

export function createRuleRateLimiter(): RuleRateLimiter {
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
