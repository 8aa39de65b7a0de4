import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from '../base/canonical-json.js';
import { KiwiError } from '../base/errors.js';

/** How to reach one external MCP server: a child process on stdio, a Streamable HTTP endpoint, or an (older) SSE endpoint. */
export type McpServerSpec =
  | { name: string; transport: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | { name: string; transport: 'http' | 'sse' | 'websocket'; url: string; headers?: Record<string, string> };

// Server names share the registry's tool-id alphabet, because they become the prefix of `server.tool`.
const serverName = z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, 'use 1-128 characters from A-Z a-z 0-9 _ . -');
// NUL cannot cross exec() and would silently truncate an argument or variable.
const noNul = (max: number) => z.string().max(max).refine((s) => !s.includes('\0'), 'must not contain NUL');

const stdioSpecSchema = z.strictObject({
  name: serverName,
  transport: z.literal('stdio'),
  command: noNul(4096).min(1),
  args: z.array(noNul(32_768)).max(1024),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'is not a valid variable name'), noNul(32_768)).optional(),
  cwd: noNul(4096).min(1).optional(),
});

const httpSpecSchema = z.strictObject({
  name: serverName,
  transport: z.enum(['http', 'sse', 'websocket']),
  url: z
    .string()
    .max(8192)
    .refine((raw) => {
      if (!URL.canParse(raw)) return false;
      return ['http:', 'https:', 'ws:', 'wss:'].includes(new URL(raw).protocol);
    }, 'must be an absolute http://, https://, ws:// or wss:// URL'),
  headers: z.record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'is not a valid header name'), noNul(8192)).optional(),
});

const specSchema = z.discriminatedUnion('transport', [stdioSpecSchema, httpSpecSchema]).refine(
  (spec) => spec.transport === 'stdio' || (spec.transport === 'websocket') === /^wss?:/.test(spec.url),
  { message: 'a websocket server takes a ws:// or wss:// URL, an http or sse one an http:// or https:// URL', path: ['url'] },
);

/** Validates a spec from config or a manifest; throws INVALID_INPUT naming the bad field. */
export function parseMcpServerSpec(input: unknown): McpServerSpec {
  const parsed = specSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const name = typeof input === 'object' && input !== null && 'name' in input ? String(input.name) : '(unnamed)';
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(spec)'}: ${issue.message}`);
  throw new KiwiError(
    'INVALID_INPUT',
    `MCP server spec "${name}" is invalid: ${problems.join('; ')}. ` +
      `Give { name, transport: 'stdio', command, args[] } or { name, transport: 'http' (or 'sse', or 'websocket' with a ws:// URL), url }.`,
    { details: { server: name, problems } },
  );
}

/** A stable fingerprint of everything that decides what the connection talks to, so a changed spec reconnects. */
export function specKey(spec: McpServerSpec): string {
  return createHash('sha256').update(canonicalJson(spec)).digest('hex').slice(0, 32);
}

/** How the spec is named in messages: the command line, or the URL without credentials, query or headers (they may hold secrets). */
export function describeSpec(spec: McpServerSpec): string {
  if (spec.transport !== 'stdio') {
    const url = new URL(spec.url);
    url.username = url.password = url.search = url.hash = '';
    return url.href;
  }
  const line = [spec.command, ...spec.args].map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : JSON.stringify(part))).join(' ');
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
