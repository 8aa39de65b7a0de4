import { KiwiError } from '../base/errors.js';
import { isPlainObject } from '../base/plain-object.js';
import type { Tool } from '../registry/types.js';

/**
 * Kiwi's own spellings of a merged tool config, turned into the gateway's before the config is
 * checked: `url` for `url_template`, `auth` for an Authorization header, `entrypoint` for `script`,
 * `timeout_default`/`timeout` in seconds, `command` as an argv list. Each rewrite keeps the checks
 * of the form it becomes; where both spellings are written and disagree, the config is refused.
 */
type Config = Record<string, unknown>;

export function httpConfigForm(config: Config, tool: Tool): Config {
  const out = withTimeout(renamed(config, 'url', 'url_template', tool), tool);
  if (typeof out['response_transform'] === 'string') out['response_transform'] = { path: out['response_transform'] };
  return withAuth(out, tool);
}

export function mcpServerConfigForm(config: Config, server: Tool): Config {
  return withAuth(config, server);
}

export function subprocessConfigForm(config: Config, tool: Tool): Config {
  let out = withTimeout(renamed(config, 'entrypoint', 'script', tool), tool);
  const command = out['command'];
  if (Array.isArray(command)) {
    if (command.length === 0 || !command.every((c) => typeof c === 'string')) refuse(tool, 'config.command', 'is an empty list or has a non-string element; write command: [executable, ...arguments]');
    const args = out['args'] === undefined ? [] : out['args'];
    if (!Array.isArray(args)) refuseShell(tool, 'config.args', String(args));
    out = { ...out, command: command[0], args: [...command.slice(1), ...args] };
  } else if (typeof command === 'string' && looksLikeShell(command)) {
    refuseShell(tool, 'config.command', command);
  }
  if (typeof out['args'] === 'string') refuseShell(tool, 'config.args', out['args']);
  const script = out['script'];
  if (typeof script === 'string' && /[:(]/.test(script)) {
    refuse(tool, 'config.entrypoint', `\`${script}\` names a function; the gateway runs a script file — write one that reads the arguments as JSON on stdin and calls the function, and name that file`);
  }
  return out;
}

/** Whitespace or shell syntax outside `${ENV}` and `{param}` templates: meant for `sh -c`, which the gateway never runs. */
function looksLikeShell(command: string): boolean {
  const bare = command.replace(/\$\{[^}]*\}|\{[A-Za-z_][A-Za-z0-9_]*\}/g, 'x');
  return /[\s|&;<>`$()*?]/.test(bare);
}

function refuseShell(tool: Tool, field: string, text: string): never {
  const [exe = 'ls', ...rest] = text.trim().split(/\s+/);
  const form = /[|&;<>`$()"'\\]/.test(text)
    ? `write the executable and each argument separately (command: ${exe}, args: [...] — an argv array); pipes, redirection and quoting need a script file run by a runtime (config.entrypoint)`
    : field === 'config.args'
      ? `write each argument as its own list element: args: ${JSON.stringify([exe, ...rest])} (an argv array)`
      : `write the executable and each argument separately: command: ${exe} and args: ${JSON.stringify(rest)} (an argv array)`;
  refuse(tool, field, `\`${text.slice(0, 80)}\` is a shell string, which the gateway does not run (no sh -c: quoting and metacharacters would become an injection point); ${form}`);
}

function refuse(tool: Tool, field: string, why: string): never {
  throw new KiwiError('CHAIN_INVALID', `tool ${tool.id} (${tool.source.path}): ${field} ${why}`);
}

function renamed(config: Config, kiwi: string, ours: string, tool: Tool): Config {
  if (!(kiwi in config)) return { ...config };
  const { [kiwi]: value, ...rest } = config;
  if (ours in rest && rest[ours] !== value) refuse(tool, `config.${kiwi}`, `and config.${ours} are both set and differ; keep one`);
  return { ...rest, [ours]: value };
}

/** Kiwi gives timeouts in seconds (`timeout_default` on runtimes, `timeout` on tools); ours is `timeout_ms`. */
function withTimeout(config: Config, tool: Tool): Config {
  const { timeout_default: byDefault, timeout, ...rest } = config;
  const seconds = timeout ?? byDefault;
  if (seconds === undefined || 'timeout_ms' in rest) return rest;
  if (typeof seconds !== 'number' || !(seconds > 0)) refuse(tool, 'config.timeout', 'must be a positive number of seconds');
  return { ...rest, timeout_ms: Math.round(seconds * 1000) };
}

/** `auth: "Bearer ${TOKEN}"` or `auth: { type: bearer, token: "${TOKEN}" }` → an Authorization header; an explicit header wins. */
function withAuth(config: Config, tool: Tool): Config {
  const { auth, ...rest } = config;
  if (auth === undefined || auth === null) return rest;
  let value: string;
  if (typeof auth === 'string') value = auth;
  else if (isPlainObject(auth) && auth['type'] === 'bearer' && typeof auth['token'] === 'string') value = `Bearer ${auth['token']}`;
  else refuse(tool, 'config.auth', 'must be "Bearer ${TOKEN}" or { type: bearer, token: "${TOKEN}" }; for other schemes write the header under config.headers');
  const written = rest['headers'] ?? {};
  // Spread into a map, a list would become headers named "0", "1"; refused, as the schema refuses it without auth.
  if (!isPlainObject(written)) refuse(tool, 'config.headers', `must be a map of header names to values (X-Api-Key: "\${KEY}"), not ${Array.isArray(written) ? 'a list' : `a ${typeof written}`}`);
  const headers: Config = { ...written };
  if (!Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) headers['Authorization'] = value;
  return { ...rest, headers };
}
