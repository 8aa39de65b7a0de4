import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import type { McpServerSpec } from '../mcp-client/client-pool.js';
import { buildChildEnv } from '../primitives/subprocess.js';
import type { RequirementSet } from '../primitives/python-requirements.js';
import { parseRequirement } from '../registry/python-requirement.js';
import type { Tool } from '../registry/types.js';
import type { ResolvedChain } from './chain.js';
import { authorHost } from './author-host.js';
import { httpConfigForm, mcpServerConfigForm, subprocessConfigForm } from './config-forms.js';
import { parseJsonPath } from './json-path.js';
import type { ExecutionPlan, HttpPlan, McpPlan, SubprocessPlan, ThreadPlan } from './plan-types.js';
import { substitute, substituteDeep, wholeParam, type SubstitutionScope } from './substitute.js';

export interface PlanContext {
  /** The project root: relative `cwd` and paths resolve against it. */
  root: string;
  /** The gateway's environment, the only source of `${ENV}` values and of allowlisted variables. */
  env: Readonly<Record<string, string | undefined>>;
  /** The called tool was written by an agent: no host it names is the author's, so the SSRF guard checks every one. */
  agentWritten?: boolean;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_OUTPUT = 1024 * 1024;
/** Passed to children besides PATH, HOME and LANG (see buildChildEnv); everything else needs `env_allowlist`. */
const PASS_THROUGH_ENV = ['LC_ALL', 'TZ', 'TMPDIR'];
/** What every child gets of the gateway's environment, whoever wrote the tool: none of it is a secret. */
export const HARMLESS_ENV: readonly string[] = ['PATH', 'HOME', 'LANG', ...PASS_THROUGH_ENV];

const SubprocessConfig = z.looseObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  env_allowlist: z.array(z.string()).default([]),
  cwd: z.string().default('.'),
  stdin: z.string().optional(),
  timeout_ms: z.number().int().positive().max(3_600_000).default(DEFAULT_TIMEOUT_MS),
  max_output_bytes: z.number().int().positive().max(64 * 1024 * 1024).default(DEFAULT_MAX_OUTPUT),
  script: z.string().optional(),
  /** Kiwi's bash tools read their arguments from the environment: true gives KIWI_PARAM_<NAME>, a string is the prefix. */
  params_as_env: z.union([z.boolean(), z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be a prefix of capitals, digits and _')]).default(false),
  /** What a `sandboxed` or `restricted` tool asks of its container; the policy's `isolation.container` caps it. */
  container: z.strictObject({ cpus: z.number().positive().max(256).optional(), memory_mb: z.number().int().min(16).optional() }).optional(),
});

const HttpConfig = z.looseObject({
  method: z.string().regex(/^[A-Za-z]+$/).default('GET'),
  url_template: z.string().min(1),
  headers: z.record(z.string(), z.string()).default({}),
  /** Query parameters added to the URL, each a template; one that is only `{param}` is left out when the call does not give it. */
  query: z.record(z.string(), z.string()).default({}),
  body_template: z.unknown().optional(),
  timeout_ms: z.number().int().positive().max(600_000).default(DEFAULT_TIMEOUT_MS),
  max_response_bytes: z.number().int().positive().max(64 * 1024 * 1024).default(4 * 1024 * 1024),
  response_transform: z
    .strictObject({
      pick: z.string().optional(),
      // Kiwi's JSONPath string, moved here by httpConfigForm.
      path: z.string().optional(),
      fields: z.array(z.string()).optional(),
      max_items: z.number().int().positive().optional(),
    })
    .optional(),
});

const McpServerConfig = z.discriminatedUnion('transport', [
  z.looseObject({
    transport: z.literal('stdio'),
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    env_allowlist: z.array(z.string()).default([]),
    cwd: z.string().default('.'),
  }),
  z.looseObject({ transport: z.literal('http'), url: z.string().url(), headers: z.record(z.string(), z.string()).default({}) }),
  z.looseObject({ transport: z.literal('sse'), url: z.string().url(), headers: z.record(z.string(), z.string()).default({}) }),
  z.looseObject({ transport: z.literal('websocket'), url: z.string().url(), headers: z.record(z.string(), z.string()).default({}) }),
]);

/** The runtime that runs directives as threads (Kiwi's name for it). */
const THREAD_RUNTIME = 'llm_runtime';

/** Turns a call into an execution plan: which primitive, with what argv, URL or MCP request. Runs nothing. */
export function planCall(chain: ResolvedChain, args: Record<string, unknown>, ctx: PlanContext): ExecutionPlan {
  const tool = chain.links[0] as Tool;
  const thread = threadPlan(tool, chain, args);
  if (thread !== undefined) return thread;
  const serverLink = chain.links.find((l) => l.type === 'mcp_server');
  if ((serverLink !== undefined || chain.primitive !== 'subprocess') && (chain.isolation === 'sandboxed' || chain.isolation === 'restricted')) {
    const holder = chain.links.find((l) => l.isolation !== undefined) as Tool;
    throw new KiwiError('CHAIN_INVALID', `tool ${tool.id}: isolation: ${chain.isolation} (from ${holder.id}, ${holder.source.path}) runs a subprocess tool in a container, and this tool runs ${serverLink ? `on MCP server ${serverLink.id}` : 'as an HTTP request'}; remove the isolation field or set it to standard`);
  }
  const paths = pathArgs(tool, args);
  if (serverLink) return planMcp(tool, serverLink, chain, args, ctx, paths);
  return chain.primitive === 'subprocess' ? planSubprocess(tool, chain, args, ctx, paths) : planHttp(tool, chain, args, ctx, paths);
}

/** Plans a call of a tool that an MCP server reports but `.ai/` does not declare (`server.tool`). */
export function planDynamicMcp(server: Tool, chain: ResolvedChain, remoteTool: string, args: Record<string, unknown>, ctx: PlanContext): McpPlan {
  return { kind: 'mcp', server: serverSpec(server, chain.config, ctx), tool: remoteTool, args, paths: [] };
}

function planSubprocess(tool: Tool, chain: ResolvedChain, args: Record<string, unknown>, ctx: PlanContext, paths: SubprocessPlan['paths']): SubprocessPlan {
  const config = parseConfig(SubprocessConfig, subprocessConfigForm(chain.config, tool), tool, 'subprocess');
  // A script the runtime's args do not place (Kiwi's `entrypoint`) goes after them, its arguments as JSON on stdin.
  if (config.script !== undefined && !config.args.some((a) => a.includes('{script}'))) {
    config.args = [...config.args, '{script}'];
    config.stdin ??= '{args_json}';
  }
  const params = { ...args, args_json: JSON.stringify(args), ...(config.script ? { script: scriptPath(tool, config.script) } : {}) };
  const scope: SubstitutionScope = { params, env: ctx.env, where: `tool ${tool.id}: config.args` };
  const argv = [substitute(config.command, { ...scope, where: `tool ${tool.id}: config.command` })];
  const fromParams: SubprocessPlan['fromParams'] = [];
  for (const template of config.args) {
    const name = wholeParam(template);
    if (name !== null && name in args) {
      // A whole-element `{param}` keeps list arguments as separate argv elements and drops absent optionals.
      const value = args[name];
      for (const item of Array.isArray(value) ? value : [value]) {
        fromParams.push({ index: argv.length, param: name });
        argv.push(typeof item === 'string' ? item : JSON.stringify(item));
      }
      continue;
    }
    if (name !== null && isParameter(tool, name) && !(name in args)) continue;
    const before = argv.length;
    argv.push(substitute(template, scope));
    for (const p of Object.keys(args)) if (template.includes(`{${p}}`)) fromParams.push({ index: before, param: p });
  }
  return {
    kind: 'subprocess',
    argv,
    cwd: resolveInside(ctx.root, substitute(config.cwd, scope), `tool ${tool.id}: config.cwd`),
    env: childEnv(config.env, config.env_allowlist, scope, ctx.env, paramsEnv(args, config.params_as_env)),
    ...(config.stdin !== undefined ? { stdin: substitute(config.stdin, { ...scope, where: `tool ${tool.id}: config.stdin` }) } : {}),
    timeoutMs: config.timeout_ms,
    maxOutputBytes: config.max_output_bytes,
    fromParams,
    paths,
    isolation: chain.isolation,
    ...(config.container ? { container: { ...(config.container.cpus ? { cpus: config.container.cpus } : {}), ...(config.container.memory_mb ? { memoryMb: config.container.memory_mb } : {}) } } : {}),
    ...pythonRequires(tool, config['requires'], argv[0] as string),
  };
}

/** The URL with `query`'s entries appended (encoded); an entry that is one absent argument (`{limit}`) is optional and left out. */
function withQuery(url: string, query: Record<string, string>, scope: SubstitutionScope): string {
  const added = new URLSearchParams();
  for (const [name, template] of Object.entries(query)) {
    const only = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(template)?.[1];
    if (only !== undefined && scope.params[only] === undefined) continue;
    added.append(name, substitute(template, scope));
  }
  const text = added.toString();
  if (text === '') return url;
  return `${url}${url.includes('?') ? '&' : '?'}${text}`;
}

function planHttp(tool: Tool, chain: ResolvedChain, args: Record<string, unknown>, ctx: PlanContext, paths: HttpPlan['paths']): HttpPlan {
  const config = parseConfig(HttpConfig, httpConfigForm(chain.config, tool), tool, 'http_client');
  const scope: SubstitutionScope = { params: args, env: ctx.env, where: `tool ${tool.id}: config.url_template` };
  const url = withQuery(substitute(config.url_template, scope, encodeURIComponent), config.query, { ...scope, where: `tool ${tool.id}: config.query` });
  const author = ctx.agentWritten ? undefined : authorHost(config.url_template, scope, url);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(config.headers)) headers[k] = substitute(v, { ...scope, where: `tool ${tool.id}: config.headers.${k}` });
  let body: string | undefined;
  if (config.body_template !== undefined) {
    const filled = substituteDeep(config.body_template, { ...scope, where: `tool ${tool.id}: config.body_template` });
    body = typeof filled === 'string' ? filled : JSON.stringify(filled);
    if (typeof filled !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const t = config.response_transform;
  // Parsed now so a bad path fails before the request is sent.
  if (t?.path !== undefined) parseJsonPath(t.path);
  return {
    kind: 'http',
    request: {
      method: config.method.toUpperCase(),
      url,
      headers,
      ...(body !== undefined ? { body } : {}),
      headersTimeoutMs: config.timeout_ms,
      bodyTimeoutMs: config.timeout_ms,
      maxResponseBytes: config.max_response_bytes,
      // The manifest's own host is reached as written (when a person wrote it); any other host, an argument's or a redirect's, only at a public address.
      guard: author === undefined ? {} : { authorHost: author },
    },
    ...(t ? { transform: { ...(t.pick ? { pick: t.pick } : {}), ...(t.path ? { path: t.path } : {}), ...(t.fields ? { fields: t.fields } : {}), ...(t.max_items ? { maxItems: t.max_items } : {}) } } : {}),
    paths,
  };
}

function planMcp(tool: Tool, server: Tool, chain: ResolvedChain, args: Record<string, unknown>, ctx: PlanContext, paths: McpPlan['paths']): McpPlan {
  if (tool.type === 'mcp_server') {
    throw new KiwiError('INVALID_INPUT', `\`${tool.id}\` is an MCP server, not a tool; call one of its tools as \`${tool.id}.<tool>\` (see \`kiwi tools list\`)`);
  }
  return { kind: 'mcp', server: serverSpec(server, chain.config, ctx), tool: remoteToolName(tool, chain.config), args, paths };
}

/** Kiwi's `mcp_tool_name` or our `tool`; without either, the part of the id after the last dot. */
function remoteToolName(tool: Tool, config: Record<string, unknown>): string {
  const kiwi = config['mcp_tool_name'];
  const ours = config['tool'];
  if (kiwi !== undefined && ours !== undefined && kiwi !== ours) {
    throw new KiwiError('CHAIN_INVALID', `tool ${tool.id} (${tool.source.path}): config.mcp_tool_name "${String(kiwi)}" and config.tool "${String(ours)}" differ; keep one`);
  }
  const named = kiwi ?? ours;
  if (named === undefined) return tool.id.slice(tool.id.lastIndexOf('.') + 1);
  if (typeof named !== 'string' || named.length === 0) {
    throw new KiwiError('CHAIN_INVALID', `tool ${tool.id} (${tool.source.path}): config.mcp_tool_name must be the remote tool's name, a non-empty string`);
  }
  return named;
}

/** A thread tool, a directive tool, or a tool on llm_runtime runs its directive as a thread; undefined for any other tool. */
function threadPlan(tool: Tool, chain: ResolvedChain, args: Record<string, unknown>): ThreadPlan | undefined {
  const runtime = chain.links.find((l) => l.id === THREAD_RUNTIME);
  if (tool.type !== 'directive' && tool.type !== 'thread' && runtime === undefined) return undefined;
  const named = tool.config['directive'];
  const directive = typeof named === 'string' && named !== '' ? named : tool.type === 'directive' ? tool.id : undefined;
  if (directive === undefined) {
    throw new KiwiError('CHAIN_INVALID', `tool ${tool.id} (${tool.source.path}) runs on ${runtime?.id ?? THREAD_RUNTIME} but names no directive; add config.directive: NAME`);
  }
  const tier = tool.config['model_tier'];
  return { kind: 'thread', directive, inputs: args, ...(typeof tier === 'string' && tier !== '' ? { tier } : {}) };
}

function paramsEnv(args: Record<string, unknown>, setting: boolean | string): Record<string, string> {
  if (setting === false) return {};
  const prefix = setting === true ? 'KIWI_PARAM_' : setting;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined) continue;
    out[`${prefix}${name.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}`] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return out;
}

function serverSpec(server: Tool, merged: Record<string, unknown>, ctx: PlanContext): McpServerSpec {
  const config = parseConfig(McpServerConfig, mcpServerConfigForm(merged, server), server, 'mcp_server');
  const scope: SubstitutionScope = { params: {}, env: ctx.env, where: `mcp server ${server.id}: config` };
  if (config.transport !== 'stdio') {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(config.headers)) headers[k] = substitute(v, scope);
    return { name: server.id, transport: config.transport, url: substitute(config.url, scope), headers };
  }
  return {
    name: server.id,
    transport: 'stdio',
    command: substitute(config.command, scope),
    args: config.args.map((a) => substitute(a, scope)),
    env: childEnv(config.env, config.env_allowlist, scope, ctx.env),
    cwd: resolveInside(ctx.root, substitute(config.cwd, scope), `mcp server ${server.id}: config.cwd`),
  };
}

function parseConfig<T>(schema: z.ZodType<T>, config: Record<string, unknown>, tool: Tool, primitive: string): T {
  const parsed = schema.safeParse(config);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue ? issue.path.join('.') : '';
  throw new KiwiError('CHAIN_INVALID', `tool ${tool.id} (${tool.source.path}): config${field ? `.${field}` : ''} for ${primitive}: ${issue?.message ?? 'invalid'}; fix the manifest or the runtime it uses`);
}

/** `literal`: values set as they are (call arguments), never read as templates; the config's `env` wins over them. */
function childEnv(extra: Record<string, string>, allowlist: string[], scope: SubstitutionScope, env: PlanContext['env'], literal: Record<string, string> = {}): Record<string, string> {
  const filled: Record<string, string> = { ...literal };
  for (const [k, v] of Object.entries(extra)) filled[k] = substitute(v, { ...scope, where: `${scope.where} env.${k}` });
  return buildChildEnv(env, [...PASS_THROUGH_ENV, ...allowlist], filled);
}

function resolveInside(root: string, relative: string, where: string): string {
  const resolved = path.resolve(root, relative);
  if (resolved !== root && !resolved.startsWith(root + path.sep)) {
    throw new KiwiError('POLICY_DENIED', `${where}: \`${relative}\` is outside the project root ${root}; use a folder inside it`);
  }
  return resolved;
}

function scriptPath(tool: Tool, script: string): string {
  const dir = path.dirname(path.resolve(tool.source.path));
  const file = path.resolve(dir, script);
  if (!existsSync(file)) {
    throw new KiwiError('CHAIN_INVALID', `tool ${tool.id}: script \`${script}\` does not exist next to ${tool.source.path}; put the file there or fix config.script`);
  }
  const real = realpathSync(file);
  if (!real.startsWith(realpathSync(dir) + path.sep)) {
    throw new KiwiError('POLICY_DENIED', `tool ${tool.id}: script \`${script}\` resolves outside the tool's folder; keep scripts beside their manifest`);
  }
  return real;
}

function isParameter(tool: Tool, name: string): boolean {
  return tool.parameters.some((p) => p.name === name);
}

function pathArgs(tool: Tool, args: Record<string, unknown>): SubprocessPlan['paths'] {
  const out: SubprocessPlan['paths'] = [];
  for (const p of tool.parameters) {
    if (p.format !== 'path') continue;
    const value = args[p.name];
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      if (typeof v === 'string') out.push({ param: p.name, value: v, access: p.access ?? 'read' });
    }
  }
  return out;
}

/** `config.requires` as the executor checks it; the manifest's loader already refused one it cannot read. */
function pythonRequires(tool: Tool, requires: unknown, python: string): { requires?: RequirementSet } {
  if (requires === undefined || (Array.isArray(requires) && requires.length === 0)) return {};
  const list = (Array.isArray(requires) ? requires : [requires]).map((raw) => {
    const parsed = parseRequirement(raw);
    if (!parsed.ok) throw new KiwiError('CHAIN_INVALID', `tool ${tool.id} (${tool.source.path}): config.requires: ${parsed.reason}`);
    return parsed.value;
  });
  if (!/^python(\d+(\.\d+)?)?$/.test(path.basename(python))) {
    throw new KiwiError('CHAIN_INVALID', `tool ${tool.id} (${tool.source.path}): config.requires lists Python packages, but the tool runs \`${python}\`, not python; run it on python_runtime or remove config.requires`);
  }
  return { requires: { key: `${tool.id}@${tool.version} ${python}`, tool: tool.id, list } };
}
