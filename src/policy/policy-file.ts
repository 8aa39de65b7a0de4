/**
 * `.ai/config/policy.yaml` → the session's root permission context. Strict: an unknown or
 * misspelt field is an error (a typo must not silently widen or narrow rights). A field left
 * out allows nothing; a missing file allows nothing at all.
 *
 * `rate_limits.per_tool` keys are globs over tool ids; for each call the first key (in file
 * order) that matches the tool applies.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, sep } from 'node:path';
import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { isolationSchema, toIsolationPolicy } from './isolation-policy.js';
import { parseAllowEntry } from './private-allowance.js';
import { parseYamlConfig, readConfigText } from '../registry/yaml-config.js';
import { ANNEALABLE_FAILURES, DEFAULT_ANNEALED_FAILURES } from './annealing-rules.js';
import { approvalsSchema, loadPolicyHooks, policyHooksSchema, toApprovalRules } from './policy-hooks.js';
import { createPermissionContext, emptyRules, type PermissionContext, type PermissionRules, type RateLimit, type SandboxPolicy } from './permission-context.js';

const MAX_POLICY_BYTES = 256 * 1024;
const EMPTY = 'is empty; write `version: 1` and the rules (tools, filesystem, commands, mcp, rate_limits)';

const name = z.string().min(1, 'must not be empty');
const pathGlob = name.refine((g) => !g.startsWith('/') && !g.includes('\\') && !g.split('/').includes('..') && !g.includes('\0'), {
  message: 'must be a glob relative to the project root, with `/` between folders and no `..` (e.g. "src/**")',
});
const limit = z.strictObject({
  max: z.number().int().min(1, 'must be at least 1'),
  per_ms: z.number().int().min(1, 'must be at least 1 (milliseconds)'),
});
const commandRule = z.strictObject({
  executable: name.refine((e) => !e.includes('\0'), { message: 'must not contain NUL' }),
  subcommands: z.array(name).optional(),
  deny_args: z.array(name.refine(isRegExp, { message: 'must be a valid regular expression (JavaScript syntax, `u` flag)' })).optional(),
  allow_flags: z.array(name.refine((f) => f.startsWith('-'), { message: 'must start with `-` (e.g. "--oneline" or "--format=*")' })).optional(),
});
const privateHost = name.refine((entry) => parseAllowEntry(entry) !== null, {
  message: 'must be a host name ("db.internal"), an IP address ("10.0.0.5") or a CIDR range ("10.0.0.0/8", "fd00::/8"); no wildcards, URLs or ports',
});
const policySchema = z.strictObject(
  {
    version: z.literal(1, 'must be 1 (write `version: 1`)'),
    tools: z.array(name).optional(),
    filesystem: z.strictObject({ read: z.array(pathGlob).optional(), write: z.array(pathGlob).optional(), allow_secret_paths: z.array(pathGlob).optional() }).optional(),
    commands: z.array(commandRule).optional(),
    mcp: z.strictObject({ tools: z.array(name).optional(), path_args: z.record(name, z.array(name.regex(/^[A-Za-z0-9_.-]{1,128}$/, 'must be an argument name'))).optional() }).optional(),
    sandbox: z
      .strictObject({
        mode: z.enum(['auto', 'require', 'off'], 'must be auto, require or off').optional(),
        bwrap: name.refine((b) => b.startsWith('/') && !b.includes('\0'), { message: 'must be an absolute path to the bwrap executable' }).optional(),
        network: z.array(name).optional(),
        secrets: z.record(name, z.array(pathGlob)).optional(),
        limits: z
          .strictObject({
            processes: z.number().int().min(1, 'must be at least 1').optional(),
            memory_mb: z.number().int().min(16, 'must be at least 16').optional(),
            cpu_seconds: z.number().int().min(1, 'must be at least 1').optional(),
            tmp_mb: z.number().int().min(1, 'must be at least 1').optional(),
          })
          .optional(),
      })
      .optional(),
    isolation: isolationSchema.optional(),
    network: z.strictObject({ allow_private: z.array(privateHost).optional() }).optional(),
    created_items: z
      .strictObject({
        env: z.array(name.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable\'s name (letters, digits and _), no globs')).optional(),
        quota_mb: z.number().int().min(0, 'must be 0 (agents create nothing) or more').max(1_000_000).optional(),
      })
      .optional(),
    hooks: policyHooksSchema.optional(),
    approvals: approvalsSchema.optional(),
    annealing: z
      .strictObject({
        on_failure: z.boolean(),
        failures: z.array(z.enum(ANNEALABLE_FAILURES, `must be one of ${ANNEALABLE_FAILURES.join(', ')}: a run denied, cut by a limit, cancelled or escalated is never annealed`)).min(1, 'must name at least one failure').optional(),
      })
      .optional(),
    rate_limits: z
      .strictObject({ per_tool: z.record(name, limit).optional(), per_client: limit.optional(), per_session: limit.optional() })
      .refine((r) => r.per_client === undefined || r.per_session === undefined, { message: 'sets both per_client and per_session (its older name); keep per_client' })
      .optional(),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? `must be a mapping of fields (version, tools, filesystem, …), not ${Array.isArray(issue.input) ? 'a list' : `a ${typeof issue.input}`}` : undefined) },
);
type PolicyYaml = z.infer<typeof policySchema>;

export async function loadPolicyFile(file: string, root: string, signal?: AbortSignal): Promise<PermissionContext> {
  throwIfAborted(signal, 'loading the policy file');
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `project root ${JSON.stringify(root)} cannot be opened; pass the folder that holds \`.ai/\``, { cause: error });
  }
  const shown = displayName(file, realRoot, root);
  const text = await readConfigText(file, { shown, maxBytes: MAX_POLICY_BYTES, code: 'INVALID_POLICY', ...(signal === undefined ? {} : { signal }) });
  if (text === undefined) return createPermissionContext(realRoot, emptyRules(), `policy ${shown} (file missing, so nothing is allowed)`);
  return parsePolicy(text, shown, realRoot);
}

/** `file` is only used in labels and messages. Throws INVALID_POLICY naming the file, field and fix. */
export function parsePolicy(text: string, file: string, root: string): PermissionContext {
  const { data, source } = parseYamlConfig(text, { shown: file, schema: policySchema, code: 'INVALID_POLICY', whenEmpty: EMPTY });
  const context = createPermissionContext(root, toRules(data), `policy ${file}`);
  const hooks = loadPolicyHooks(data.hooks ?? [], source, file);
  const network = { allowPrivate: data.network?.allow_private ?? [] };
  const annealing = data.annealing?.on_failure ? { annealing: { failures: data.annealing.failures ?? DEFAULT_ANNEALED_FAILURES } } : {};
  const created = data.created_items;
  const createdItems = { env: created?.env ?? [], ...(created?.quota_mb === undefined ? {} : { quotaBytes: created.quota_mb * 1024 * 1024 }) };
  return Object.freeze({ ...context, sandbox: toSandboxPolicy(data.sandbox), isolation: toIsolationPolicy(data.isolation), network, createdItems, hooks, approvals: toApprovalRules(data.approvals), ...annealing });
}

function toSandboxPolicy(s: PolicyYaml['sandbox']): SandboxPolicy {
  const limits = s?.limits;
  return {
    mode: s?.mode ?? 'auto',
    ...(s?.bwrap ? { bwrap: s.bwrap } : {}),
    network: s?.network ?? [],
    secrets: s?.secrets ?? {},
    limits: {
      ...(limits?.processes ? { processes: limits.processes } : {}),
      ...(limits?.memory_mb ? { memoryBytes: limits.memory_mb * 1024 * 1024 } : {}),
      ...(limits?.cpu_seconds ? { cpuSeconds: limits.cpu_seconds } : {}),
      ...(limits?.tmp_mb ? { tmpBytes: limits.tmp_mb * 1024 * 1024 } : {}),
    },
  };
}

function toRules(p: PolicyYaml): PermissionRules {
  const rules = emptyRules();
  rules.tools = p.tools ?? [];
  rules.fsRead = p.filesystem?.read ?? [];
  rules.fsWrite = p.filesystem?.write ?? [];
  rules.fsSecrets = p.filesystem?.allow_secret_paths ?? [];
  rules.mcpTools = p.mcp?.tools ?? [];
  rules.mcpPathArgs = p.mcp?.path_args ?? {};
  rules.commands = (p.commands ?? []).map((c) => ({
    executable: c.executable,
    ...(c.subcommands ? { subcommands: c.subcommands } : {}),
    ...(c.deny_args ? { denyArgs: c.deny_args } : {}),
    ...(c.allow_flags ? { allowFlags: c.allow_flags } : {}),
  }));
  const perTool: Record<string, RateLimit> = {};
  for (const [key, l] of Object.entries(p.rate_limits?.per_tool ?? {})) perTool[key] = { max: l.max, perMs: l.per_ms };
  // per_session is the older name: limits were always meant per caller, and now key on the client.
  const c = p.rate_limits?.per_client ?? p.rate_limits?.per_session;
  rules.rateLimits = { perTool, ...(c ? { perClient: { max: c.max, perMs: c.per_ms } } : {}) };
  return rules;
}

function isRegExp(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

function displayName(file: string, realRoot: string, root: string): string {
  for (const r of [realRoot, root]) {
    const rel = relative(r, file);
    if (rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)) return rel.split(sep).join('/');
  }
  return file;
}
