/**
 * A directive's `<permissions>` tags (the Kiwi MCP format, see compat/kiwi-mcp/README.md) →
 * permission rules and capability strings. The directive's context is a child of the caller's,
 * so a tag can only narrow what the policy already allows; a directive that declares nothing
 * may do nothing.
 *
 * | tag                                                  | rules                        | capability        |
 * |------------------------------------------------------|------------------------------|-------------------|
 * | `<read resource="filesystem" path="src/**"/>`        | fsRead `src/**`              | `fs.read`         |
 * | `<write resource="filesystem" path="dist/**"/>`      | fsWrite `dist/**`            | `fs.write`, `fs.read` |
 * | `<execute resource="tool" id="bash"/>`               | tools `bash`                 | `tool.bash`       |
 * | `<execute resource="shell" action="git"/>`           | commands `{executable: git}` | `process.exec`    |
 * | `<execute resource="kiwi-mcp" action="search"/>`     | tools `kiwi-mcp.search`      | `kiwi-mcp.search` |
 * | `<execute resource="mcp" id="files.read_file"/>`     | mcpTools `files.read_file`   | `mcp.files.read_file` |
 * | `<execute resource="mcp" id="files"/>` (no dot)      | mcpTools `files.*`           | `mcp.files.*`     |
 * | `<execute resource="spawn" action="thread"/>`        | (none; see capabilities)     | `spawn.thread`    |
 *
 * Kiwi MCP's own actions (search, load, execute, help) are served here as gateway tools, so
 * they map to tool ids `kiwi-mcp.<action>`. For `mcp` and `tool`, `id` and `action` are both
 * accepted. Any other tag grants nothing and is reported in `ignored`.
 */
import type { PermissionTag } from '../registry/types.js';
import { childContext, emptyRules, type PermissionContext, type PermissionRules } from './permission-context.js';

export interface IgnoredTag {
  tag: PermissionTag;
  reason: string;
}

export interface TagRules {
  rules: PermissionRules;
  ignored: IgnoredTag[];
}

export function rulesFromTags(tags: readonly PermissionTag[]): TagRules {
  const rules = emptyRules();
  const ignored: IgnoredTag[] = [];
  const add = (list: string[], value: string): void => {
    if (!list.includes(value)) list.push(value);
  };
  for (const tag of tags) {
    const resource = tag.resource.trim().toLowerCase();
    const target = (tag.kind === 'execute' ? (tag.id ?? tag.action) : tag.path)?.trim();
    if (!target || target.includes('\0')) {
      ignored.push({ tag, reason: `<${tag.kind} resource="${tag.resource}"> needs a non-empty ${tag.kind === 'execute' ? 'id or action' : 'path'}` });
      continue;
    }
    if (tag.kind === 'read' || tag.kind === 'write') {
      if (resource !== 'filesystem') {
        ignored.push({ tag, reason: `<${tag.kind}> is understood only for resource="filesystem"` });
        continue;
      }
      const glob = target.replace(/^(\.\/)+/u, '');
      if (glob.startsWith('/') || glob.includes('\\') || glob.split('/').includes('..')) {
        ignored.push({ tag, reason: `path "${target}" must be a glob relative to the project root without \`..\`` });
        continue;
      }
      add(tag.kind === 'read' ? rules.fsRead : rules.fsWrite, glob);
      continue;
    }
    switch (resource) {
      case 'tool':
        add(rules.tools, target);
        break;
      case 'kiwi-mcp':
        add(rules.tools, `kiwi-mcp.${target}`);
        break;
      case 'mcp':
        add(rules.mcpTools, target.includes('.') ? target : `${target}.*`);
        break;
      case 'shell':
        if (!rules.commands.some((c) => c.executable === target)) rules.commands.push({ executable: target });
        break;
      case 'spawn':
        break;
      default:
        ignored.push({ tag, reason: `resource "${tag.resource}" is not known; use filesystem, tool, shell, kiwi-mcp, mcp or spawn` });
    }
  }
  return { rules, ignored };
}

/** The context a directive runs in: its declared rights, intersected with `parent`'s. */
export function directiveContext(parent: PermissionContext, directiveName: string, tags: readonly PermissionTag[]): { context: PermissionContext; ignored: IgnoredTag[] } {
  const { rules, ignored } = rulesFromTags(tags);
  return { context: childContext(parent, rules, `directive ${directiveName}`), ignored };
}

/** Capability strings of the tags, sorted and without repeats; `fs.write` brings `fs.read`. */
export function capabilities(tags: readonly PermissionTag[]): string[] {
  const out = new Set<string>();
  for (const tag of tags) {
    const resource = tag.resource.trim().toLowerCase();
    const target = (tag.kind === 'execute' ? (tag.id ?? tag.action) : tag.path)?.trim();
    if (!target) continue;
    if (tag.kind === 'read' || tag.kind === 'write') {
      if (resource !== 'filesystem') continue;
      out.add('fs.read');
      if (tag.kind === 'write') out.add('fs.write');
    } else if (resource === 'shell') out.add('process.exec');
    else if (resource === 'tool') out.add(`tool.${target}`);
    else if (resource === 'kiwi-mcp') out.add(`kiwi-mcp.${target}`);
    else if (resource === 'spawn') out.add(`spawn.${target}`);
    else if (resource === 'mcp') out.add(`mcp.${target.includes('.') ? target : `${target}.*`}`);
  }
  return [...out].sort();
}

/** A child's capabilities: those it declares that its parent also has. */
export function intersectCapabilities(parent: readonly string[], own: readonly string[]): string[] {
  const allowed = new Set(parent);
  return [...new Set(own)].filter((c) => allowed.has(c)).sort();
}
