import { KiwiError } from '../base/errors.js';

/**
 * Template substitution for tool configs. One pass over the template, never recursive, so a
 * parameter value that itself contains `{x}` or `${HOME}` stays literal text.
 *
 *   {param}            a call argument (objects and arrays as JSON)
 *   ${NAME}            an environment variable; missing is an error that names it
 *   ${NAME:-default}   an environment variable with a default
 *   {{ and }}          literal braces
 */
export interface SubstitutionScope {
  params: Record<string, unknown>;
  env: Readonly<Record<string, string | undefined>>;
  /** Where the template came from, for error messages (e.g. "tool weather: config.url_template"). */
  where: string;
}

const TOKEN = /\{\{|\}\}|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function substitute(template: string, scope: SubstitutionScope, encode: (value: string) => string = (v) => v): string {
  return template.replace(TOKEN, (match, envName?: string, envDefault?: string, param?: string) => {
    if (match === '{{') return '{';
    if (match === '}}') return '}';
    if (envName !== undefined) return envValue(envName, envDefault, scope);
    return encode(paramText(param as string, scope));
  });
}

/** Fills only the `${ENV}` placeholders, leaving every `{param}` as written: the template as its author and the operator made it. */
export function substituteEnv(template: string, scope: Omit<SubstitutionScope, 'params'>): string {
  return template.replace(TOKEN, (match, envName?: string, envDefault?: string) => (envName === undefined ? match : envValue(envName, envDefault, { ...scope, params: {} })));
}

/** The `${NAME}` placeholders (without a default) in every string of a JSON-like value, each name once. */
export function envNamesIn(value: unknown): string[] {
  const names = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const m of v.matchAll(TOKEN)) if (m[1] !== undefined && m[2] === undefined) names.add(m[1]);
    } else if (Array.isArray(v)) {
      v.forEach(walk);
    } else if (v !== null && typeof v === 'object') {
      Object.values(v).forEach(walk);
    }
  };
  walk(value);
  return [...names];
}

/** The names of `{param}` placeholders a template uses. */
export function placeholders(template: string): string[] {
  const names: string[] = [];
  for (const m of template.matchAll(TOKEN)) if (m[3] !== undefined) names.push(m[3]);
  return names;
}

/** A whole-string `{param}` template: the value keeps its JSON type (used for bodies and argv spreading). */
export function wholeParam(template: string): string | null {
  const m = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(template);
  return m ? (m[1] as string) : null;
}

/** Substitutes inside every string of a JSON-like value; a string that is exactly `{param}` takes the value itself. */
export function substituteDeep(value: unknown, scope: SubstitutionScope): unknown {
  if (typeof value === 'string') {
    const name = wholeParam(value);
    if (name !== null) return name in scope.params ? scope.params[name] : undefined;
    return substitute(value, scope);
  }
  if (Array.isArray(value)) return value.map((v) => substituteDeep(v, scope)).filter((v) => v !== undefined);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const s = substituteDeep(v, scope);
      if (s !== undefined) out[k] = s;
    }
    return out;
  }
  return value;
}

function envValue(name: string, fallback: string | undefined, scope: SubstitutionScope): string {
  const value = scope.env[name];
  if (value !== undefined && value !== '') return value;
  if (fallback !== undefined) return fallback;
  throw new KiwiError(
    'INVALID_INPUT',
    `${scope.where}: environment variable ${name} is not set; export it, or write \${${name}:-default} in the tool config`,
  );
}

function paramText(name: string, scope: SubstitutionScope): string {
  if (!(name in scope.params) || scope.params[name] === undefined) {
    throw new KiwiError('INVALID_INPUT', `${scope.where}: the template needs argument \`${name}\`, which the call did not give`);
  }
  const value = scope.params[name];
  return typeof value === 'string' ? value : JSON.stringify(value);
}
