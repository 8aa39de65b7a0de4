import { createPermissionContext, emptyRules, type PermissionContext } from '../../src/policy/permission-context.js';
import type { Tool } from '../../src/registry/types.js';

/**
 * A FORMAT.md catalog, imported by bench/resolve/catalog.ts as schema-only tools, made callable
 * for the prefetch benchmark: each tool POSTs its arguments to the local mock API.
 */

/**
 * Verbs that read or compute without changing anything. A catalog says nothing about side
 * effects, so the name decides: a tool is read-only (`mutates_state: false`, so it may run
 * speculatively) when its name starts with one of these followed by a word break
 * (`getWeather`, `check_status`, `search`), and mutating otherwise (`createUser`, `bookFlight`,
 * `sendEmail`, `updateDesign`). Unknown verbs count as mutating, as the gateway's default does.
 */
export const READ_VERBS = [
  'get', 'check', 'search', 'list', 'find', 'query', 'retrieve', 'fetch', 'lookup', 'look', 'read', 'view', 'show', 'count',
  'analyze', 'analyse', 'calculate', 'compute', 'estimate', 'predict', 'forecast', 'evaluate', 'assess', 'compare', 'measure',
  'detect', 'identify', 'recognize', 'classify', 'diagnose', 'inspect', 'scan', 'monitor', 'track', 'verify', 'validate',
  'recommend', 'suggest', 'explain', 'describe', 'summarize', 'summarise', 'convert', 'translate', 'determine', 'simulate',
  'explore', 'browse', 'discover',
] as const;

// Longer verbs first, so "lookup" is tried before "look".
const VERB_PREFIX = new RegExp(`^(?:${[...READ_VERBS].sort((a, b) => b.length - a.length).join('|')})`, 'i');

export function isReadOnlyName(name: string): boolean {
  const verb = VERB_PREFIX.exec(name)?.[0];
  if (!verb) return false;
  // "listen" and "checkout" are not "list" and "check": the verb must end a word.
  return /^(?:$|[A-Z0-9_.-])/.test(name.slice(verb.length));
}

const PARAM_TOKEN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The imported tools, each now an `api` tool that POSTs `{param: value, …}` to `<apiUrl>/tools/<id>`. */
export function callableCatalogTools(tools: readonly Tool[], apiUrl: string): Map<string, Tool> {
  const out = new Map<string, Tool>();
  for (const tool of tools) {
    const body: Record<string, string> = {};
    // `{param}` alone keeps the value's JSON type; an absent optional parameter is left out.
    for (const p of tool.parameters) if (PARAM_TOKEN.test(p.name)) body[p.name] = `{${p.name}}`;
    out.set(tool.id, {
      ...tool,
      mutatesState: !isReadOnlyName(tool.id),
      config: { method: 'POST', url_template: `${apiUrl}/tools/${tool.id}`, body_template: body, timeout_ms: 30_000 },
    });
  }
  return out;
}

/** The benchmark's policy: every catalog tool, no files, no commands, no rate limit (the mock API is local). */
export function catalogPolicy(root: string): PermissionContext {
  return createPermissionContext(root, { ...emptyRules(), tools: ['*'] }, 'prefetch benchmark policy (every catalog tool)');
}
