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
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { ISOLATION_FIELDS, isolationSchema, toIsolationPolicy } from './isolation-policy.js';
import { parseAllowEntry } from './private-allowance.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { yamlProblems } from '../registry/yaml-source.js';
import { ANNEALABLE_FAILURES, DEFAULT_ANNEALED_FAILURES } from './annealing-rules.js';
import { APPROVAL_FIELDS, approvalsSchema, HOOK_FIELDS, loadPolicyHooks, policyHooksSchema, toApprovalRules } from './policy-hooks.js';
import { createPermissionContext, emptyRules, type PermissionContext, type PermissionRules, type RateLimit, type SandboxPolicy } from './permission-context.js';

const MAX_POLICY_BYTES = 256 * 1024;

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
const policySchema = z.strictObject({
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
});
type PolicyYaml = z.infer<typeof policySchema>;

/** Fields each mapping may hold, for "unknown field" messages; keys are paths with list indexes as `[]` and per_tool keys as `*`. */
const FIELDS: Record<string, string[]> = {
  '': ['version', 'tools', 'filesystem', 'commands', 'mcp', 'sandbox', 'isolation', 'network', 'created_items', 'hooks', 'approvals', 'annealing', 'rate_limits'],
  created_items: ['env', 'quota_mb'],
  annealing: ['on_failure', 'failures'],
  ...ISOLATION_FIELDS,
  network: ['allow_private'],
  'hooks[]': HOOK_FIELDS,
  'hooks[].directive': ['name', 'inputs'],
  approvals: APPROVAL_FIELDS,
  sandbox: ['mode', 'bwrap', 'network', 'secrets', 'limits'],
  'sandbox.limits': ['processes', 'memory_mb', 'cpu_seconds', 'tmp_mb'],
  filesystem: ['read', 'write', 'allow_secret_paths'],
  'commands[]': ['executable', 'subcommands', 'deny_args', 'allow_flags'],
  mcp: ['tools', 'path_args'],
  rate_limits: ['per_tool', 'per_client', 'per_session'],
  'rate_limits.per_tool.*': ['max', 'per_ms'],
  'rate_limits.per_client': ['max', 'per_ms'],
  'rate_limits.per_session': ['max', 'per_ms'],
};

export async function loadPolicyFile(file: string, root: string, signal?: AbortSignal): Promise<PermissionContext> {
  throwIfAborted(signal, 'loading the policy file');
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `project root ${JSON.stringify(root)} cannot be opened; pass the folder that holds \`.ai/\``, { cause: error });
  }
  const shown = displayName(file, realRoot, root);
  let buffer: Buffer;
  try {
    const tooLarge = (size: number) => new KiwiError('INVALID_POLICY', `${shown}: is ${size} bytes, more than the ${MAX_POLICY_BYTES} allowed; a policy should be short`);
    buffer = await readCappedFile(file, MAX_POLICY_BYTES, tooLarge, signal);
  } catch (error) {
    if (error instanceof KiwiError) throw error;
    if ((error as { code?: unknown }).code === 'ENOENT') {
      return createPermissionContext(realRoot, emptyRules(), `policy ${shown} (file missing, so nothing is allowed)`);
    }
    if ((error as { name?: unknown }).name === 'AbortError') throw new KiwiError('TOOL_CANCELLED', 'loading the policy file was cancelled', { cause: error });
    throw new KiwiError('INVALID_POLICY', `${shown}: cannot be read (${(error as Error).message}); check the file's permissions`, { cause: error });
  }
  return parsePolicy(buffer.toString('utf8'), shown, realRoot);
}

/** `file` is only used in labels and messages. Throws INVALID_POLICY naming the file, field and fix. */
export function parsePolicy(text: string, file: string, root: string): PermissionContext {
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  const problem = yamlProblems(text, doc.errors)[0];
  if (problem) {
    throw new KiwiError('INVALID_POLICY', `${file}: line ${problem.line}, column ${problem.column} is not valid YAML (${problem.reason}); fix the syntax`);
  }
  const data: unknown = doc.toJS({ maxAliasCount: 50 });
  if (data === null || data === undefined) {
    throw new KiwiError('INVALID_POLICY', `${file}: is empty; write \`version: 1\` and the rules (tools, filesystem, commands, mcp, rate_limits)`);
  }
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new KiwiError('INVALID_POLICY', `${file}: must be a mapping of fields (version, tools, filesystem, …), not a ${Array.isArray(data) ? 'list' : typeof data}`);
  }
  const parsed = policySchema.safeParse(data, { reportInput: true });
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 5).map(describeIssue);
    throw new KiwiError('INVALID_POLICY', `${file}: ${problems.join('; ')}`, { details: { file, issues: parsed.error.issues } });
  }
  const context = createPermissionContext(root, toRules(parsed.data), `policy ${file}`);
  const hooks = loadPolicyHooks(parsed.data.hooks ?? [], doc, text, file);
  const network = { allowPrivate: parsed.data.network?.allow_private ?? [] };
  const annealing = parsed.data.annealing?.on_failure ? { annealing: { failures: parsed.data.annealing.failures ?? DEFAULT_ANNEALED_FAILURES } } : {};
  const created = parsed.data.created_items;
  const createdItems = { env: created?.env ?? [], ...(created?.quota_mb === undefined ? {} : { quotaBytes: created.quota_mb * 1024 * 1024 }) };
  return Object.freeze({ ...context, sandbox: toSandboxPolicy(parsed.data.sandbox), isolation: toIsolationPolicy(parsed.data.isolation), network, createdItems, hooks, approvals: toApprovalRules(parsed.data.approvals), ...annealing });
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

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = fieldPath(issue.path);
  const at = field === '' ? 'top level' : `field \`${field}\``;
  if (issue.code === 'unrecognized_keys') {
    const allowed = FIELDS[shapeKey(issue.path)];
    const keys = issue.keys.map((k) => `\`${k}\``).join(', ');
    return `unknown field ${keys} at ${at}${allowed ? `; allowed fields are ${allowed.join(', ')}` : ''} (check the spelling)`;
  }
  if (issue.code === 'invalid_type' && issue.input === undefined) return `${at} is required`;
  if (issue.code === 'invalid_type') return `${at} must be ${article(issue.expected)}`;
  return `${at} ${issue.message}`;
}

function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out;
}

function shapeKey(path: readonly PropertyKey[]): string {
  const parts: string[] = [];
  for (const [i, p] of path.entries()) {
    if (typeof p === 'number') parts.push('[]');
    else parts.push(path[i - 1] === 'per_tool' && path[i - 2] === 'rate_limits' ? '*' : String(p));
  }
  return parts.join('.').replace(/\.\[\]/gu, '[]');
}

function article(expected: string): string {
  if (expected === 'array') return 'a list (e.g. `[a, b]`)';
  if (expected === 'object' || expected === 'record') return 'a mapping (`key: value` lines)';
  return `a ${expected}`;
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
