/**
 * The one table of a directive's permission tags (Kiwi MCP's `<permissions>` forms, see
 * compat/kiwi-mcp/README.md): which tags load (registry/directive-permissions.ts) and what each
 * grants (policy/directive-permissions.ts). Both read tags through `readPermissionTag`, so a tag
 * that loads is exactly a tag that grants, and a tag that is refused grants nothing.
 *
 * | tag                                              | rule added                   | capabilities          |
 * |--------------------------------------------------|------------------------------|-----------------------|
 * | `<read resource="filesystem" path="src/**"/>`    | fsRead `src/**`              | `fs.read`             |
 * | `<write resource="filesystem" path="dist/**"/>`  | fsWrite `dist/**`            | `fs.read`, `fs.write` |
 * | `<execute resource="tool" id="bash"/>`           | tools `bash`                 | `tool.bash`           |
 * | `<execute resource="shell" action="git"/>`       | commands `{executable: git}` | `process.exec`        |
 * | `<execute resource="kiwi-mcp" action="search"/>` | tools `kiwi-mcp.search`      | `kiwi-mcp.search`     |
 * | `<execute resource="mcp" id="files.read_file"/>` | mcpTools `files.read_file`   | `mcp.files.read_file` |
 * | `<execute resource="mcp" id="files"/>` (no dot)  | mcpTools `files.*`           | `mcp.files.*`         |
 * | `<execute resource="spawn" action="thread"/>`    | (none)                       | `spawn.thread`        |
 *
 * For `tool` and `mcp` the target may be written as `id` or `action` (Kiwi MCP wrote both), never
 * both at once. Rules are globs (policy/permission-context.ts); targets may use `*` and nothing
 * else of glob syntax, so a name grants that name.
 */
import type { PermissionTag } from './types.js';
import { didYouMeanSuffix } from '../base/did-you-mean.js';

export type PermissionKind = PermissionTag['kind'];
export type TargetAttribute = 'path' | 'id' | 'action';

/** What one tag adds to a permission context's rules. */
export type Grant =
  | { rule: 'fsRead' | 'fsWrite' | 'tools' | 'mcpTools'; glob: string }
  | { rule: 'commands'; executable: string }
  | { rule: 'none' };

export interface PermissionForm {
  kind: PermissionKind;
  resource: string;
  /** The attributes that may name the target, the usual one first; exactly one is given. */
  target: readonly TargetAttribute[];
  /** Correct tags, for messages. */
  examples: readonly string[];
  /** Why `target` cannot be used, or undefined. */
  check(target: string): string | undefined;
  grant(target: string): Grant;
  capabilities(target: string): string[];
}

const PERMISSION_KINDS: readonly PermissionKind[] = ['read', 'write', 'execute'];

const NAME = /^[A-Za-z0-9_.*-]+$/u;

function nameCheck(what: string): (target: string) => string | undefined {
  return (target) => (NAME.test(target) ? undefined : `${JSON.stringify(target)} is not ${what}; use letters, digits, _ . - and * for "any"`);
}

/** Project-relative globs only: the policy resolves them against the project root. */
function checkGlob(target: string): string | undefined {
  if (/[\u0000-\u001f\u007f]/u.test(target)) return `path ${JSON.stringify(target)} contains control characters`;
  const glob = relativeGlob(target);
  if (glob === '' || glob.startsWith('/') || glob.includes('\\') || glob.split('/').includes('..')) {
    return `path ${JSON.stringify(target)} must be a glob relative to the project root, without \`..\`, e.g. "src/**"`;
  }
  return undefined;
}

function relativeGlob(target: string): string {
  return target.replace(/^(\.\/)+/u, '');
}

/** `server` alone means every tool of that server. */
function mcpGlob(target: string): string {
  return target.includes('.') ? target : `${target}.*`;
}

const PERMISSION_FORMS: readonly PermissionForm[] = [
  {
    kind: 'read',
    resource: 'filesystem',
    target: ['path'],
    examples: ['<read resource="filesystem" path="src/**"/>'],
    check: checkGlob,
    grant: (t) => ({ rule: 'fsRead', glob: relativeGlob(t) }),
    capabilities: () => ['fs.read'],
  },
  {
    kind: 'write',
    resource: 'filesystem',
    target: ['path'],
    examples: ['<write resource="filesystem" path="dist/**"/>'],
    check: checkGlob,
    grant: (t) => ({ rule: 'fsWrite', glob: relativeGlob(t) }),
    capabilities: () => ['fs.read', 'fs.write'],
  },
  {
    kind: 'execute',
    resource: 'tool',
    target: ['id', 'action'],
    examples: ['<execute resource="tool" id="bash"/>'],
    check: nameCheck('a tool id'),
    grant: (t) => ({ rule: 'tools', glob: t }),
    capabilities: (t) => [`tool.${t}`],
  },
  {
    kind: 'execute',
    resource: 'shell',
    target: ['action'],
    examples: ['<execute resource="shell" action="git"/>'],
    check: (t) => (/^[^\s\u0000-\u001f\u007f]+$/u.test(t) ? undefined : `${JSON.stringify(t)} is not one executable; name it alone, e.g. action="git"`),
    grant: (t) => ({ rule: 'commands', executable: t }),
    capabilities: () => ['process.exec'],
  },
  {
    kind: 'execute',
    resource: 'kiwi-mcp',
    target: ['action'],
    examples: ['<execute resource="kiwi-mcp" action="search"/>'],
    check: nameCheck('a Kiwi MCP action'),
    grant: (t) => ({ rule: 'tools', glob: `kiwi-mcp.${t}` }),
    capabilities: (t) => [`kiwi-mcp.${t}`],
  },
  {
    kind: 'execute',
    resource: 'mcp',
    target: ['id', 'action'],
    examples: ['<execute resource="mcp" id="files.read_file"/> (one tool)', '<execute resource="mcp" id="files"/> (every tool of server files)'],
    check: nameCheck('an MCP server or server.tool'),
    grant: (t) => ({ rule: 'mcpTools', glob: mcpGlob(t) }),
    capabilities: (t) => [`mcp.${mcpGlob(t)}`],
  },
  {
    kind: 'execute',
    resource: 'spawn',
    target: ['action'],
    examples: ['<execute resource="spawn" action="thread"/>'],
    check: nameCheck('something to spawn'),
    grant: () => ({ rule: 'none' }),
    capabilities: (t) => [`spawn.${t}`],
  },
];

export interface TagProblem {
  /** The attribute at fault; none when the tag itself is. */
  attribute?: string;
  reason: string;
}

export type TagReading = { ok: true; tag: PermissionTag; form: PermissionForm; target: string } | { ok: false; problems: TagProblem[] };

/**
 * Reads one tag, given its element name and attributes: its form and target, or every reason it
 * cannot be used (each naming the valid forms).
 */
export function readPermissionTag(name: string, attrs: Readonly<Record<string, string | undefined>>): TagReading {
  if (!(PERMISSION_KINDS as readonly string[]).includes(name)) {
    return refuse({ reason: `<${name}> is not a permission; write <read .../>, <write .../> or <execute .../>${didYouMeanSuffix(name, PERMISSION_KINDS)}` });
  }
  const kind = name as PermissionKind;
  const forms = PERMISSION_FORMS.filter((f) => f.kind === kind);
  const resource = attrs['resource'];
  const form = forms.find((f) => f.resource === resource);
  if (form === undefined) {
    const examples = forms.flatMap((f) => f.examples).join(' or ');
    const got = resource === undefined ? 'has no resource' : `resource "${resource}" is not known for <${kind}>`;
    const guess = resource === undefined ? '' : didYouMeanSuffix(resource, forms.map((f) => f.resource));
    return refuse({ attribute: 'resource', reason: `${got}; write ${examples}${guess}` });
  }
  const write = form.examples.join(' or ');
  const allowed = ['resource', ...form.target];
  const problems: TagProblem[] = [];
  for (const [attribute, value] of Object.entries(attrs)) {
    if (value === undefined || allowed.includes(attribute)) continue;
    problems.push({
      attribute,
      reason: `<${kind} resource="${form.resource}"> has no attribute "${attribute}"; it takes resource and ${form.target.join(' or ')}: write ${write}${didYouMeanSuffix(attribute, allowed)}`,
    });
  }
  const given = form.target.filter((a) => attrs[a] !== undefined);
  const first = form.target[0] ?? 'path';
  if (given.length > 1) {
    problems.push({ attribute: given[1], reason: `give ${given.join(' or ')}, not both; write ${write}` });
  } else if (given.length === 0 || (attrs[given[0] ?? first] ?? '').trim() === '') {
    problems.push({ attribute: given[0] ?? first, reason: `needs ${first}="..."; write ${write}` });
  }
  if (problems.length > 0) return { ok: false, problems };
  const attribute = given[0] ?? first;
  const target = (attrs[attribute] ?? '').trim();
  const bad = form.check(target);
  if (bad !== undefined) return refuse({ attribute, reason: `${bad}; write ${write}` });
  const tag: PermissionTag = { kind, resource: form.resource };
  tag[attribute] = attrs[attribute];
  return { ok: true, tag, form, target };
}

function refuse(problem: TagProblem): TagReading {
  return { ok: false, problems: [problem] };
}
