import { inspect } from 'node:util';
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { DEFAULT_PORT, LISTEN_DEFAULTS, type ListenLimits } from '../http/server/listen-limits.js';
import { DEMO_MODEL_ID } from '../llm/demo-provider.js';
import { checkConfig, loadYamlConfig } from '../registry/yaml-config.js';
import { DEFAULT_ALLOWED_HOSTS, DEFAULT_MAX_CONCURRENT_PER_CLIENT } from '../http/server/request-guard.js';
import { shadowWarnings } from './model-patterns.js';
import { openAiBaseUrl, urlProblem } from './upstream-url.js';
import { LOOP_LIMITS, type LimitRange, type LoopLimits } from '../loop/loop-limits.js';
import { DEFAULT_MAX_BODY_BYTES } from '../http/server/read-json-body.js';
import { DEFAULT_MENU_SIZE } from '../loop/tool-menu.js';
import { checkpointsSchema } from '../checkpoints/checkpoint-config.js';
import { budgetsSchema, pricesSchema, toBudgetConfig, type BudgetConfig } from '../budgets/budget-config.js';
import { unpricedWarnings } from './unpriced-warnings.js';
import { shownPath } from '../base/shown-path.js';
import type { KernelLimits } from '../kernel/kernel-limits.js';
import { kernelSchema } from '../kernel/kernel-config.js';
import { prefetchSchema, type PrefetchConfig } from '../prefetch/prefetch-config.js';
import { envHost, envPort, HOST } from './listen-env.js';
import type { Secret, UpstreamConfig } from './upstream-config.js';

/**
 * `.ai/config/gateway.yaml` — optional; without it the gateway listens on 127.0.0.1:8787 and
 * serves the offline demo model. The shipped file documents every field. Environment variables
 * (passed in by main; this module never reads process.env) add upstreams and move the port.
 */


/** How long requests in flight get to finish once `kiwi serve` is told to stop (`limits.shutdown_grace_ms`). */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

export interface GatewayConfig {
  /** The config file as shown to people (relative to the project root when inside it). */
  file: string;
  /** False when the file does not exist and defaults apply. */
  fromFile: boolean;
  host: string;
  port: number;
  /** In routing order: the first whose models match a request's model serves it. */
  upstreams: UpstreamConfig[];
  limits: LoopLimits;
  maxBodyBytes: number;
  /** Host names (optionally `name:port`) the gateway answers to; `*` for any. */
  allowedHosts: string[];
  /** Browser origins that may call any endpoint. */
  allowedOrigins: string[];
  /** Requests one client may have running at once. */
  maxConcurrentPerClient: number;
  /** Likely tools listed in each request's intent instructions (0: no menu). */
  toolMenu: number;
  /** What the HTTP listener bounds (src/http/server/listen.ts). */
  listen: Pick<ListenLimits, 'bodyTimeoutMs' | 'maxConnections'>;
  /** How long requests running when `kiwi serve` is told to stop may go on before they are cancelled. */
  shutdownGraceMs: number;
  mcp: { allowedOrigins: string[] };
  prefetch: PrefetchConfig;
  /** Each chat and MCP execute/resolve recorded as a kernel execution (default on). */
  recordChats: boolean;
  /** What the kernel keeps: sizes, per-client quotas, retention (`kernel:`; kernel/kernel-limits.ts). */
  kernelLimits: KernelLimits;
  /** A directive's model tier → the model its thread runs on. */
  modelTiers: Record<string, string>;
  /** Prices per model, budgets per client, one request's spend (budgets/budget-config.ts). */
  budgets: BudgetConfig;
  /** Problems that do not stop the gateway (an upstream that can never be reached…), for the banner. */
  warnings: string[];
}

export interface GatewayConfigContext {
  env: Readonly<Record<string, string | undefined>>;
  root: string;
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

const HINT = 'see the comments in .ai/config/gateway.yaml';
const KEY = /^[\x21-\x7e]{1,4096}$/;

/** A zod error message that tells a missing field from a wrong one. */
const says = (missing: string, wrong: string) => ({ error: (issue: { input?: unknown }) => (issue.input === undefined ? missing : wrong) });

const modelPattern = z
  .string('must be a model id or glob, e.g. gpt-4o or claude-*')
  .regex(/^[\x21-\x7e]{1,200}$/, 'must be 1 to 200 printable characters without spaces, e.g. gpt-4o, claude-* or llama3.1:8b');

const upstreamSchema = z.strictObject({
  name: z.string(says('is required: a short name for the banner and errors', 'must be a string')).regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, "_", "." or "-"'),
  kind: z.enum(['openai', 'anthropic', 'demo'], says('is required: openai (also llama.cpp, Ollama, vLLM…), anthropic or demo', 'must be openai (also llama.cpp, Ollama, vLLM…), anthropic or demo')),
  base_url: z.string().min(1).max(4096).optional(),
  api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be the NAME of an environment variable, e.g. OPENAI_API_KEY (never the key itself)').optional(),
  models: z.array(modelPattern, says('is required: the model ids or globs it serves, e.g. ["gpt-4o", "gpt-4o-mini"] or ["*"]', 'must be a list, e.g. ["gpt-4o", "gpt-4o-mini"] or ["*"]')).min(1, 'list at least one model id or glob').max(100),
  timeout_ms: z.number().int().min(1000, 'must be at least 1000').max(600_000, 'must be at most 600000 (10 minutes)').optional(),
  fallbacks: z.array(z.string('must be the name of another upstream'), 'must be a list of upstream names, e.g. [backup]').max(10, 'at most 10').optional(),
});

/** A loop limit as gateway.yaml takes it: the range and default of the one table (loop-limits.ts). */
const loopLimit = (range: LimitRange) => z.number().int().min(range.min, range.tooLow).max(range.max).default(range.default);

const limitsSchema = z
  .strictObject({
    max_turns: loopLimit(LOOP_LIMITS.maxTurns),
    max_tokens: loopLimit(LOOP_LIMITS.maxTokens),
    // 0 is no limit, as leaving it out is.
    max_spend_usd: z.number('must be a number of US dollars').min(0, 'must be 0 (no limit) or more').max(1_000_000).default(0),
    max_tool_calls: loopLimit(LOOP_LIMITS.maxToolCalls),
    max_duration_ms: loopLimit(LOOP_LIMITS.maxDurationMs),
    max_result_chars: loopLimit(LOOP_LIMITS.maxResultChars),
    max_repeats: loopLimit(LOOP_LIMITS.maxRepeats),
    max_body_bytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(DEFAULT_MAX_BODY_BYTES),
    max_concurrent_requests_per_client: z.number().int().min(1).max(100_000).default(DEFAULT_MAX_CONCURRENT_PER_CLIENT),
    body_timeout_ms: z.number().int().min(1000).max(600_000).default(LISTEN_DEFAULTS.bodyTimeoutMs),
    max_connections: z.number().int().min(1).max(100_000).default(LISTEN_DEFAULTS.maxConnections),
    shutdown_grace_ms: z.number().int().min(0).max(600_000).default(DEFAULT_SHUTDOWN_GRACE_MS),
  })
  .prefault({});

const origins = z.array(z.string()).max(100).default([]);

const schema = z.strictObject({
  host: z.string().regex(HOST, 'must be a host name or IP address, e.g. 127.0.0.1 or 0.0.0.0').default(DEFAULT_HOST),
  allowed_hosts: z
    .array(z.string().regex(/^(\*|\[[0-9a-fA-F:.]+\](:\d{1,5})?|[A-Za-z0-9.-]{1,253}(:\d{1,5})?)$/, 'must be a host name or address as clients write it in the URL, optionally with :port (e.g. gateway.internal, 10.0.0.5:8787, [::1]), or "*" for any'))
    .min(1, 'list at least one host name, e.g. [localhost, 127.0.0.1]')
    .max(100)
    .default(() => [...DEFAULT_ALLOWED_HOSTS]),
  allowed_origins: origins,
  tool_menu: z.number().int().min(0).max(100, 'must be at most 100: every listed tool costs the agent context on every turn').default(DEFAULT_MENU_SIZE),
  port: z.number().int().min(0).max(65535, 'must be 0 to 65535').default(DEFAULT_PORT),
  upstreams: z.array(upstreamSchema).max(50).default([]),
  limits: limitsSchema,
  mcp: z.strictObject({ allowed_origins: origins }).prefault({}),
  prefetch: prefetchSchema,
  kernel: kernelSchema,
  // Read by every process that runs tools (src/checkpoints/checkpoint-config.ts); checked here with the rest.
  checkpoints: checkpointsSchema,
  prices: pricesSchema.optional(),
  budgets: budgetsSchema.optional(),
  // A directive's `<model tier="…">` → the model its thread runs on (src/threads/).
  model_tiers: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a tier name like fast, balanced or powerful'), modelPattern).default({}),
});

export async function loadGatewayConfig(file: string, ctx: GatewayConfigContext): Promise<GatewayConfig> {
  const shown = shownPath(ctx.root, file);
  const spec = { shown, schema, hint: HINT };
  const loaded = await loadYamlConfig(file, { ...spec, maxBytes: 64 * 1024 });
  const { data: raw, source, fail } = loaded ?? checkConfig({}, spec);
  const line = (at: ReadonlyArray<PropertyKey>): string => {
    const pos = source?.locate(at);
    return pos === undefined ? shown : `${shown}:${pos.line}`;
  };

  const upstreams: UpstreamConfig[] = [];
  const names = new Set<string>();
  raw.upstreams.forEach((u, i) => {
    const at = ['upstreams', i];
    if (names.has(u.name)) fail([...at, 'name'], `another upstream is already named "${u.name}"; names must be unique`);
    names.add(u.name);
    if (u.kind === 'demo' && (u.base_url !== undefined || u.api_key_env !== undefined)) fail(at, 'a demo upstream takes no base_url or api_key_env (it runs offline)');
    if (u.kind === 'anthropic' && u.api_key_env === undefined) fail(at, 'an anthropic upstream needs api_key_env: the variable that holds the key, e.g. api_key_env: ANTHROPIC_API_KEY');
    const out: UpstreamConfig = { name: u.name, kind: u.kind, models: [...u.models], source: line(at) };
    if (u.kind !== 'demo') {
      const base = u.base_url ?? (u.kind === 'openai' ? DEFAULT_OPENAI_BASE_URL : DEFAULT_ANTHROPIC_BASE_URL);
      const expanded = expandEnv(base, ctx.env, (name) => fail([...at, 'base_url'], `environment variable ${name} is not set; export it, or write \${${name}:-default}`));
      const problem = urlProblem(expanded);
      if (problem !== null) fail([...at, 'base_url'], `${problem}; write e.g. http://127.0.0.1:8080/v1`);
      out.baseUrl = u.kind === 'openai' ? openAiBaseUrl(expanded) : expanded;
    }
    if (u.api_key_env !== undefined) {
      const key = (ctx.env[u.api_key_env] ?? '').trim();
      if (key === '') fail([...at, 'api_key_env'], `environment variable ${u.api_key_env} is not set; export it before starting the gateway, or remove this upstream`);
      if (!KEY.test(key)) fail([...at, 'api_key_env'], `the value of ${u.api_key_env} is not usable as a key (it must be printable ASCII without spaces)`);
      out.apiKeyEnv = u.api_key_env;
      out.apiKey = secret(key);
    }
    if (u.timeout_ms !== undefined) out.timeoutMs = u.timeout_ms;
    if (u.fallbacks !== undefined) out.fallbacks = [...u.fallbacks];
    upstreams.push(out);
  });

  const warnings: string[] = [];
  upstreams.push(...envUpstreams(ctx.env, upstreams, warnings));
  const demo = upstreams.find((u) => u.kind === 'demo');
  if (demo === undefined) upstreams.unshift({ name: uniqueName('demo', upstreams), kind: 'demo', models: [DEMO_MODEL_ID], source: 'built-in' });
  else if (!demo.models.includes(DEMO_MODEL_ID)) demo.models.unshift(DEMO_MODEL_ID);
  // Checked once the environment's and the demo's upstreams are in: a fallback may be one of them ("openai").
  raw.upstreams.forEach((u, i) =>
    u.fallbacks?.forEach((name, j) => {
      const problem = fallbackProblem(u.name, name, upstreams);
      if (problem !== undefined) fail(['upstreams', i, 'fallbacks', j], problem);
    }),
  );
  warnings.push(...shadowWarnings(upstreams, shown));

  const originsAt = (at: PropertyKey[], list: string[]): string[] =>
    list.map((o, i) => {
      const problem = originProblem(o);
      return problem === null ? new URL(o).origin : fail([...at, i], problem);
    });
  const mcpOrigins = originsAt(['mcp', 'allowed_origins'], raw.mcp.allowed_origins);
  const allowedOrigins = originsAt(['allowed_origins'], raw.allowed_origins);
  const l = raw.limits;
  const budgets = toBudgetConfig(raw.prices, raw.budgets, l.max_spend_usd || undefined);
  warnings.push(...unpricedWarnings(budgets, upstreams, shown));
  return {
    file: shown,
    fromFile: loaded !== undefined,
    host: envHost(ctx.env) ?? raw.host,
    port: envPort(ctx.env) ?? raw.port,
    upstreams,
    limits: { maxTurns: l.max_turns, maxToolCalls: l.max_tool_calls, maxDurationMs: l.max_duration_ms, maxResultChars: l.max_result_chars, maxRepeats: l.max_repeats, maxTokens: l.max_tokens },
    maxBodyBytes: l.max_body_bytes,
    allowedHosts: raw.allowed_hosts,
    allowedOrigins,
    maxConcurrentPerClient: l.max_concurrent_requests_per_client,
    toolMenu: raw.tool_menu,
    listen: { bodyTimeoutMs: l.body_timeout_ms, maxConnections: l.max_connections },
    shutdownGraceMs: l.shutdown_grace_ms,
    mcp: { allowedOrigins: [...new Set([...allowedOrigins, ...mcpOrigins])] },
    prefetch: raw.prefetch,
    recordChats: raw.kernel.recordChats,
    kernelLimits: raw.kernel.limits,
    modelTiers: raw.model_tiers,
    budgets,
    warnings,
  };
}

/**
 * Upstreams from well-known variables, after the file's (whose specific routes should win).
 * KIWI_UPSTREAM_URL comes before OPENAI_API_KEY: it is set for the gateway on purpose, while an
 * OpenAI key is often just present in the shell.
 */
function envUpstreams(env: GatewayConfigContext['env'], fromFile: UpstreamConfig[], warnings: string[]): UpstreamConfig[] {
  const out: UpstreamConfig[] = [];
  const taken = (variable: string, name: string, keyEnv?: string): boolean => {
    const by = fromFile.find((u) => u.name === name || (keyEnv !== undefined && u.apiKeyEnv === keyEnv));
    if (by !== undefined) warnings.push(`${variable} adds no upstream: the config's upstream "${by.name}" (${by.source}) already covers it`);
    return by !== undefined;
  };
  const value = (name: string) => (env[name] ?? '').trim();
  const url = (name: string, fallback: string, openAi = false) => {
    const v = value(name) || fallback;
    const problem = urlProblem(v);
    if (problem !== null) throw new KiwiError('INVALID_INPUT', `environment variable ${name}: ${problem}; set it to e.g. ${fallback}`);
    return openAi ? openAiBaseUrl(v) : v;
  };
  const key = (name: string) => {
    if (!KEY.test(value(name))) throw new KiwiError('INVALID_INPUT', `environment variable ${name} is not usable as a key (it must be printable ASCII without spaces)`);
    return secret(value(name));
  };
  if (value('ANTHROPIC_API_KEY') !== '' && !taken('ANTHROPIC_API_KEY', 'anthropic', 'ANTHROPIC_API_KEY')) {
    const baseUrl = url('ANTHROPIC_BASE_URL', DEFAULT_ANTHROPIC_BASE_URL);
    out.push({ name: 'anthropic', kind: 'anthropic', baseUrl, apiKeyEnv: 'ANTHROPIC_API_KEY', apiKey: key('ANTHROPIC_API_KEY'), models: ['claude-*'], source: 'environment variable ANTHROPIC_API_KEY' });
  }
  if (value('KIWI_UPSTREAM_URL') !== '' && !taken('KIWI_UPSTREAM_URL', 'local')) {
    out.push({ name: 'local', kind: 'openai', baseUrl: url('KIWI_UPSTREAM_URL', 'http://127.0.0.1:8080/v1', true), models: ['*'], source: 'environment variable KIWI_UPSTREAM_URL' });
  }
  if (value('OPENAI_API_KEY') !== '' && !taken('OPENAI_API_KEY', 'openai', 'OPENAI_API_KEY')) {
    const baseUrl = url('OPENAI_BASE_URL', DEFAULT_OPENAI_BASE_URL, true);
    out.push({ name: 'openai', kind: 'openai', baseUrl, apiKeyEnv: 'OPENAI_API_KEY', apiKey: key('OPENAI_API_KEY'), models: ['*'], source: 'environment variable OPENAI_API_KEY' });
  } else if (value('OPENAI_BASE_URL') !== '' && value('OPENAI_API_KEY') === '') {
    warnings.push('OPENAI_BASE_URL is set but OPENAI_API_KEY is not, so it is ignored; for a server that needs no key set KIWI_UPSTREAM_URL instead');
  }
  return out;
}

function expandEnv(text: string, env: GatewayConfigContext['env'], missing: (name: string) => never): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
    const v = env[name];
    if (v !== undefined && v !== '') return v;
    return fallback ?? missing(name);
  });
}

function originProblem(value: string): string | null {
  const example = 'write an origin such as http://localhost:3000 (scheme, host and port, no path; "*" is not accepted)';
  try {
    const url = new URL(value);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value.replace(/\/$/, '')) return null;
  } catch {
    // reported below
  }
  return `"${value.slice(0, 200)}" is not an origin; ${example}`;
}

function fallbackProblem(owner: string, name: string, upstreams: UpstreamConfig[]): string | undefined {
  if (name === owner) return `"${name}" is this upstream itself; name another upstream to try when it is down`;
  const other = upstreams.find((x) => x.name === name);
  if (other === undefined) return `no upstream is named "${name}" (upstreams: ${upstreams.map((x) => x.name).join(', ')})`;
  if (other.kind === 'demo') return `"${name}" is the offline demo model, which answers with recorded turns: it cannot stand in for a real model`;
  return undefined;
}

function uniqueName(base: string, upstreams: UpstreamConfig[]): string {
  let name = base;
  for (let i = 2; upstreams.some((u) => u.name === name); i++) name = `${base}-${i}`;
  return name;
}

function secret(value: string): Secret {
  const hidden = '[redacted]';
  return {
    reveal: () => value,
    toJSON: () => hidden,
    toString: () => hidden,
    [inspect.custom]: () => hidden,
  } as Secret;
}
