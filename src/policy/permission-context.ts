/**
 * The permission context: what a session, directive or hook may do. Default deny — an empty
 * rule list allows nothing. A child context never widens its parent: every check has to pass
 * in the child and in every ancestor (intersection), and the denial names the context that said no.
 *
 * Globs are picomatch globs with `dot: false`: `*` and `**` do not match names that start with
 * a dot, so `**` does not reach `.env` or `.git/`; write the dot in the glob (`.ai/**`,
 * `**\/.env`) to allow such paths.
 */
import { isAbsolute, resolve } from 'node:path';
import picomatch from 'picomatch';
import { KiwiError } from '../base/errors.js';
import type { LoadedHook } from '../hooks/hook-runner.js';
import type { IsolationPolicy } from './isolation-choice.js';
import type { SandboxChoice } from './sandbox-choice.js';
import type { ApprovalRules } from './policy-hooks.js';
import type { AnnealingRules } from './annealing-rules.js';

export type Decision = { allowed: true } | { allowed: false; reason: string };

export interface CommandRule {
  /** Exact argv[0] as the tool writes it (e.g. "git"); no globs, no path lookup. */
  executable: string;
  /** When set, argv[1] must be one of these. */
  subcommands?: string[];
  /** Regexes (written with their own anchors, used as is) that no argv element may match. */
  denyArgs?: string[];
  /** When set, every argv element after argv[0] that starts with "-" must be listed (exact, or "--opt=*" for any value). */
  allowFlags?: string[];
}

export interface RateLimit {
  max: number;
  perMs: number;
}

export interface PermissionRules {
  /** Globs over tool ids; "*" must be written to allow every tool. Empty allows nothing. */
  tools: string[];
  /** Globs over paths relative to the root, posix separators. Paths in fsWrite may be read too. */
  fsRead: string[];
  fsWrite: string[];
  /** Globs over protected secret locations (see secret-paths.ts) that this context still lets tools touch. */
  fsSecrets: string[];
  commands: CommandRule[];
  /** Globs over "server.tool". */
  mcpTools: string[];
  /** Argument names that hold paths, per MCP tool ("server.tool" glob), besides the ones recognised by name. */
  mcpPathArgs: Record<string, string[]>;
  /** perTool keys are globs over tool ids; the first matching key (in insertion order) applies. */
  rateLimits: { perTool: Record<string, RateLimit>; perClient?: RateLimit };
}

export interface PermissionContext {
  /** Real path of the project root; children share their parent's. */
  root: string;
  rules: PermissionRules;
  parent?: PermissionContext;
  /** Who set these rules, e.g. "policy .ai/config/policy.yaml" or "directive foo"; reasons start with it. */
  label: string;
  /** The policy file's `sandbox` setting; only the root context (the policy file) carries it. */
  sandbox?: SandboxPolicy;
  /** The policy file's `isolation` (isolation-policy.ts); only the root context carries it. */
  isolation?: IsolationPolicy;
  /** The policy file's `network`; only the root context carries it. */
  network?: NetworkPolicy;
  /** The policy file's `hooks`, compiled; only the root context carries them. */
  hooks?: readonly LoadedHook[];
  /** The policy file's `approvals`; only the root context carries them. */
  approvals?: ApprovalRules;
  /** The policy file's `annealing`, when it turns annealing on failure on; only the root context carries it. */
  annealing?: AnnealingRules;
  /** The policy file's `created_items`; every policy file's context carries it (the project's and a client's), a directive's none. */
  createdItems?: CreatedItemsPolicy;
}

/**
 * How subprocess tools are sandboxed (see primitives/sandbox.ts); `network` holds globs over the
 * tool ids that keep the network; `secrets` maps tool id globs to secret globs those tools may
 * read inside the sandbox only (git tools need `.git`), not through their path arguments.
 */
export interface SandboxPolicy extends SandboxChoice {
  network: string[];
  secrets: Record<string, string[]>;
}

/**
 * Where outbound requests may go. A host the project's author wrote (a manifest's URL, an MCP
 * server's, a webhook's) is reached as written; any other (an agent's argument, a redirect) only
 * at public addresses, unless `allowPrivate` (host names, addresses, CIDR ranges) names it.
 */
export interface NetworkPolicy {
  allowPrivate: string[];
}

/** What items that agents created get (created-items.ts). */
export interface CreatedItemsPolicy {
  /** Names of the gateway's environment variables that created tools may use (`${NAME}`, `env_allowlist`). */
  env: readonly string[];
  /** What one client's created items may keep, in bytes; absent, the default. */
  quotaBytes?: number;
}

/** Rules that allow nothing. */
export function emptyRules(): PermissionRules {
  return { tools: [], fsRead: [], fsWrite: [], fsSecrets: [], commands: [], mcpTools: [], mcpPathArgs: {}, rateLimits: { perTool: {} } };
}

export function createPermissionContext(root: string, rules: PermissionRules, label: string): PermissionContext {
  if (typeof root !== 'string' || !isAbsolute(root) || root.includes('\0')) {
    throw new KiwiError('INVALID_INPUT', `permission context "${label}": root ${JSON.stringify(root)} is not an absolute path; pass the real path of the project folder`);
  }
  return Object.freeze({ root: resolve(root), rules: copyRules(rules, label), label: checkLabel(label) });
}

/** A context that can only narrow `parent`: checks pass only where they pass here and in every ancestor. */
export function childContext(parent: PermissionContext, rules: PermissionRules, label: string): PermissionContext {
  return Object.freeze({ root: parent.root, rules: copyRules(rules, label), parent, label: checkLabel(label) });
}


/** The context and its ancestors, nearest first. */
export function contextChain(ctx: PermissionContext): PermissionContext[] {
  const chain: PermissionContext[] = [];
  for (let c: PermissionContext | undefined = ctx; c; c = c.parent) chain.push(c);
  return chain;
}

export function deny(ctx: PermissionContext, why: string): { allowed: false; reason: string } {
  return { allowed: false, reason: `denied by ${ctx.label}: ${why}` };
}

/** Runs `check` on the context and each ancestor; the first denial wins. */
export function checkChain(ctx: PermissionContext, check: (c: PermissionContext) => Decision): Decision {
  for (const c of contextChain(ctx)) {
    const d = check(c);
    if (!d.allowed) return d;
  }
  return { allowed: true };
}

/** Shows a value inside a reason: in backticks, or JSON-quoted when it holds backticks or control characters; long values are cut. */
export function quote(value: string): string {
  const cut = value.length > 200 ? `${value.slice(0, 200)}…` : value;
  return /[\u0000-\u001f\u007f`]/u.test(cut) ? JSON.stringify(cut) : `\`${cut}\``;
}

export function matchesAny(globs: readonly string[], value: string): boolean {
  return globs.some((g) => picomatch(g, GLOB_OPTIONS)(value));
}

const GLOB_OPTIONS = { dot: false, windows: false } as const;

export function checkTool(ctx: PermissionContext, toolId: string): Decision {
  const bad = badName(toolId, 'tool id');
  if (bad) return deny(ctx, bad);
  return checkChain(ctx, (c) => (matchesAny(c.rules.tools, toolId) ? ALLOWED : deny(c, `tool ${quote(toolId)} is not in \`tools\``)));
}

/** `qualified` is "server.tool". */
export function checkMcpTool(ctx: PermissionContext, qualified: string): Decision {
  const bad = badName(qualified, 'MCP tool name');
  if (bad) return deny(ctx, bad);
  if (!qualified.includes('.')) return deny(ctx, `MCP tool ${quote(qualified)} is not qualified; name it as \`server.tool\``);
  return checkChain(ctx, (c) => (matchesAny(c.rules.mcpTools, qualified) ? ALLOWED : deny(c, `MCP tool ${quote(qualified)} is not in \`mcp.tools\``)));
}

const ALLOWED: Decision = Object.freeze({ allowed: true });

function badName(name: unknown, what: string): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return `${what} is empty`;
  if (name.length > 512) return `${what} is longer than 512 characters`;
  if (/[\u0000-\u001f\u007f]/u.test(name)) return `${what} ${quote(name)} contains control characters`;
  return undefined;
}

function checkLabel(label: string): string {
  if (typeof label !== 'string' || label.trim() === '') {
    throw new KiwiError('INVALID_INPUT', 'permission context needs a label (e.g. "policy .ai/config/policy.yaml") so denials can say who denied');
  }
  return label;
}

/** Copies so later edits to the caller's objects cannot change a context, and checks what can be checked once. */
function copyRules(rules: PermissionRules, label: string): PermissionRules {
  const commands = rules.commands.map((r, i) => {
    for (const [j, pattern] of (r.denyArgs ?? []).entries()) {
      try {
        new RegExp(pattern, 'u');
      } catch (error) {
        throw new KiwiError('INVALID_POLICY', `${label}: commands[${i}].denyArgs[${j}] ${JSON.stringify(pattern)} is not a valid regular expression (${(error as Error).message}); fix or remove it`);
      }
    }
    return Object.freeze({
      executable: r.executable,
      ...(r.subcommands ? { subcommands: Object.freeze([...r.subcommands]) as string[] } : {}),
      ...(r.denyArgs ? { denyArgs: Object.freeze([...r.denyArgs]) as string[] } : {}),
      ...(r.allowFlags ? { allowFlags: Object.freeze([...r.allowFlags]) as string[] } : {}),
    });
  });
  const perTool: Record<string, RateLimit> = {};
  for (const [key, limit] of Object.entries(rules.rateLimits.perTool)) perTool[key] = checkLimit(limit, `rateLimits.perTool[${JSON.stringify(key)}]`, label);
  const perClient = rules.rateLimits.perClient;
  return Object.freeze({
    tools: Object.freeze([...rules.tools]) as string[],
    fsRead: Object.freeze([...rules.fsRead]) as string[],
    fsWrite: Object.freeze([...rules.fsWrite]) as string[],
    fsSecrets: Object.freeze([...rules.fsSecrets]) as string[],
    commands: Object.freeze(commands) as CommandRule[],
    mcpTools: Object.freeze([...rules.mcpTools]) as string[],
    mcpPathArgs: Object.freeze(Object.fromEntries(Object.entries(rules.mcpPathArgs).map(([k, v]) => [k, Object.freeze([...v]) as string[]]))),
    rateLimits: Object.freeze({
      perTool: Object.freeze(perTool),
      ...(perClient ? { perClient: checkLimit(perClient, 'rateLimits.perClient', label) } : {}),
    }),
  });
}

function checkLimit(limit: RateLimit, field: string, label: string): RateLimit {
  if (!Number.isInteger(limit.max) || limit.max < 1 || !Number.isInteger(limit.perMs) || limit.perMs < 1) {
    throw new KiwiError('INVALID_POLICY', `${label}: ${field} needs whole numbers max >= 1 and perMs >= 1, got ${JSON.stringify(limit)}`);
  }
  return Object.freeze({ max: limit.max, perMs: limit.perMs });
}
