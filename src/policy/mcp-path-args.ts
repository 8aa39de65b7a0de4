/**
 * Path checks for external MCP tools, whose schemas we did not write. An argument is a path when
 * its name says so (`path`, `paths`, `file`, `directory`, `source`, `destination`…) or the policy
 * declares it (`mcp.path_args`), and any string that is a `file://` URI is one wherever it sits.
 * Each goes through checkPath — the same decoding, realpath, globs and secret list as our own
 * tools — and is replaced by the real absolute path it was checked as, so the server (whose
 * working folder may differ) opens exactly that file. A tool whose name reads as a change
 * (write, edit, move, delete…) needs write access for its paths; others read access.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { checkPath } from './path-check.js';
import { contextChain, deny, matchesAny, quote, type PermissionContext } from './permission-context.js';

export type McpArgsDecision = { allowed: true; args: Record<string, unknown> } | { allowed: false; reason: string };

const PATH_NAMES = new Set([
  'path', 'paths', 'file', 'files', 'filename', 'filenames', 'file_path', 'filepath', 'file_paths', 'filePath', 'filePaths',
  'dir', 'dirs', 'directory', 'directories', 'folder', 'folders', 'source', 'destination', 'src', 'dest', 'target', 'cwd', 'root',
]);
const MUTATING = /(write|edit|create|move|rename|delete|remove|mkdir|rmdir|copy|upload|save|put|append|patch|update|chmod|touch)/i;
const MAX_DEPTH = 16;
const MAX_STRINGS = 1000;

export async function checkMcpPathArgs(ctx: PermissionContext, qualified: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpArgsDecision> {
  const remote = qualified.slice(qualified.indexOf('.') + 1);
  const access = MUTATING.test(remote) ? 'write' : 'read';
  const declared = new Set<string>();
  for (const c of contextChain(ctx)) {
    for (const [glob, names] of Object.entries(c.rules.mcpPathArgs)) if (matchesAny([glob], qualified)) for (const n of names) declared.add(n);
  }
  let seen = 0;

  const refuse = (why: string): Denied => new Denied(deny(ctx, `MCP tool ${quote(qualified)}: ${why}`).reason);

  async function check(value: string, where: string): Promise<string | Denied> {
    if (++seen > MAX_STRINGS) return refuse(`arguments hold more than ${MAX_STRINGS} path strings; send fewer at once`);
    const uri = value.toLowerCase().startsWith('file:');
    let raw = value;
    if (uri) {
      try {
        raw = fileURLToPath(value);
      } catch {
        return refuse(`argument \`${where}\`: ${quote(value)} is not a usable file:// URI (it must be file:///absolute/path)`);
      }
    }
    const decision = await checkPath(ctx, raw, access, signal);
    if (!decision.allowed) return new Denied(`MCP tool ${quote(qualified)}, argument \`${where}\`: ${decision.reason}`);
    return uri ? pathToFileURL(decision.resolved).href : decision.resolved;
  }

  /** Walks the value; `isPath` when the key above it names a path. Returns the value with paths replaced, or a denial. */
  async function walk(value: unknown, where: string, isPath: boolean, depth: number): Promise<unknown> {
    if (depth > MAX_DEPTH) return refuse(`arguments are nested more than ${MAX_DEPTH} levels deep`);
    if (typeof value === 'string') return isPath || value.toLowerCase().startsWith('file:') ? check(value, where) : value;
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const [i, item] of value.entries()) {
        const next = await walk(item, `${where}[${i}]`, isPath, depth + 1);
        if (next instanceof Denied) return next;
        out.push(next);
      }
      return out;
    }
    if (value !== null && typeof value === 'object') {
      if (isPath) return refuse(`argument \`${where}\` names a path but is an object; send the path as a string`);
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        const next = await walk(item, where === '' ? key : `${where}.${key}`, PATH_NAMES.has(key) || (depth === 0 && declared.has(key)), depth + 1);
        if (next instanceof Denied) return next;
        out[key] = next;
      }
      return out;
    }
    if (isPath && value !== null && value !== undefined) return refuse(`argument \`${where}\` names a path but is a ${typeof value}; send the path as a string`);
    return value;
  }

  const result = await walk(args, '', false, 0);
  if (result instanceof Denied) return { allowed: false, reason: result.reason };
  return { allowed: true, args: result as Record<string, unknown> };
}

/** A refusal found deep in the walk; a class, so no argument value can pass for one. */
class Denied {
  constructor(readonly reason: string) {}
}
