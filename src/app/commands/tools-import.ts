import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { KiwiError } from '../../base/errors.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import type { Project } from '../../project/open-project.js';
import { stripSignatureLine } from '../../registry/markdown-parts.js';
import { importMcpTools } from '../../registry/mcp-import.js';
import { API_NAME, importOpenApi, snakeCase, type ImportedTool } from '../../registry/openapi-import.js';
import { signText } from '../../registry/signature.js';
import { parseToolManifest } from '../../registry/tool-manifest.js';

/** A document larger than this is refused (GitHub's whole REST API is about 11 MiB). */
const MAX_DOCUMENT_BYTES = 32 * 1024 * 1024;

export interface ImportFlags {
  name?: string;
  server?: string;
  sign: boolean;
}

const USAGE = 'usage: kiwi tools import openapi FILE|URL [--name NAME] [--server URL] [--sign] | mcp SERVER [--sign] [--project DIR]';

/**
 * `kiwi tools import openapi FILE|URL` writes one `api` manifest per operation under
 * `.ai/tools/<name>/`; `kiwi tools import mcp SERVER` one `mcp_tool` manifest per tool a
 * configured MCP server lists (those the policy's `mcp.tools` lets it see) under
 * `.ai/tools/<server>/`. Each is checked as the registry reads it, and the command says what it
 * did. A second import of the same source changes nothing (a file is written only when its content
 * would change, its signature line aside); a tool whose source no longer has it is named, not deleted.
 */
export async function importTools(ctx: CliContext, project: Project, args: string[], flags: ImportFlags): Promise<number> {
  const [kind, source, ...extra] = args;
  if ((kind !== 'openapi' && kind !== 'mcp') || source === undefined || extra.length > 0) throw new UsageError(USAGE);
  if (kind === 'mcp') {
    if (flags.name !== undefined || flags.server !== undefined) throw new UsageError(`--name and --server are for an OpenAPI import; ${USAGE}`);
    const server = project.registry.tools.get(source);
    if (server?.type !== 'mcp_server') throw new UsageError(`no MCP server \`${source}\` in the registry; give the tool_id of an mcp_server manifest (\`kiwi tools list\` shows them)`);
    // Its id names the folder the manifests go in: one plain name, never `..`.
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(source) || source.includes('..')) throw new UsageError(`the MCP server's id \`${source}\` cannot name a folder under .ai/tools; rename it (letters, digits, "_", "-", ".")`);
    const listed = await project.proxy.listMcpTools(source);
    if (listed.status !== 'ok') throw new KiwiError('POLICY_DENIED', `cannot list the tools of MCP server ${source}: ${listed.reason}`);
    const imported = importMcpTools(source, listed.tools);
    await report(ctx, project, `MCP server ${source}`, path.join(project.root, '.ai', 'tools', source), imported, flags.sign);
    ctx.io.out(`  they run on ${source} when the policy grants both the tool (tools: [${source}_*]) and the server's tool (mcp.tools: ["${source}.…"]).`);
    return 0;
  }
  const doc = parseDocument(await readSource(project, source, ctx.cwd), source);
  const name = flags.name ?? nameOf(doc, source);
  const imported = importOpenApi(doc, { name, source: path.basename(source.split('?')[0] ?? source), ...(flags.server === undefined ? {} : { server: flags.server }) });
  await report(ctx, project, imported.title, path.join(project.root, '.ai', 'tools', name), imported, flags.sign);
  ctx.io.out(`  base URL: \${${name.toUpperCase()}_URL} moves it; credentials are read from the environment when a tool runs (see each file's headers). Grant the tools in .ai/config/policy.yaml (tools: [${name}_*]).`);
  return 0;
}

/** Writes the manifests into `dir` and says what changed, what was left out, and what the source no longer has. */
async function report(ctx: CliContext, project: Project, title: string, dir: string, imported: { tools: ImportedTool[]; skipped: string[] }, sign: boolean): Promise<void> {
  await mkdir(dir, { recursive: true });
  const counts = { created: 0, changed: 0, unchanged: 0 };
  const now = new Date();
  for (const tool of imported.tools) counts[await writeTool(dir, tool, sign, now)]++;
  const stale = await staleTools(dir, new Set(imported.tools.map((t) => `${t.id}.yaml`)));
  const shown = path.relative(project.root, dir);
  ctx.io.out(`${title}: ${imported.tools.length} tools in ${shown} (${counts.created} new, ${counts.changed} changed, ${counts.unchanged} unchanged)${sign ? ', signed' : ''}`);
  for (const line of imported.skipped) ctx.io.out(`  not imported: ${line}`);
  for (const file of stale) ctx.io.out(`  ${path.join(shown, file)}: its source does not have it any more; delete it if that is for good`);
}

async function readSource(project: Project, source: string, cwd: string): Promise<string> {
  if (/^https?:\/\//i.test(source)) {
    const res = await project.http.request({ method: 'GET', url: source, maxResponseBytes: MAX_DOCUMENT_BYTES, headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' } });
    if (res.status < 200 || res.status > 299) throw new KiwiError('INVALID_INPUT', `GET ${source} answered ${res.status}; give the URL of the OpenAPI document itself, or download it and give the file`);
    return res.body;
  }
  const file = path.resolve(cwd, source);
  const info = await stat(file).catch(() => undefined);
  if (info === undefined || !info.isFile()) throw new UsageError(`${source} is not a file or an http(s) URL; give the OpenAPI document (JSON or YAML)`);
  if (info.size > MAX_DOCUMENT_BYTES) throw new UsageError(`${source} is ${info.size} bytes, more than the ${MAX_DOCUMENT_BYTES} an OpenAPI document may be here`);
  return readFile(file, 'utf8');
}

function parseDocument(text: string, source: string): unknown {
  try {
    return /^\s*[{[]/.test(text) ? JSON.parse(text) : parse(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `${source} is neither JSON nor YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The API's name from its title (`Swagger Petstore` → `swagger_petstore`), when --name gives none. */
function nameOf(doc: unknown, source: string): string {
  const title = typeof doc === 'object' && doc !== null ? (doc as { info?: { title?: unknown } }).info?.title : undefined;
  const name = snakeCase(typeof title === 'string' ? title : path.basename(source).replace(/\.[^.]*$/, '')).replace(/^[^a-z]+/, '').slice(0, 40).replace(/_+$/, '');
  if (!API_NAME.test(name)) throw new UsageError(`cannot make a name for this API from its title; give one with --name, e.g. --name petstore`);
  return name;
}

/** Writes a tool's manifest unless the file already holds it; checked first as the registry would read it. */
async function writeTool(dir: string, tool: ImportedTool, sign: boolean, now: Date): Promise<'created' | 'changed' | 'unchanged'> {
  const file = path.join(dir, `${tool.id}.yaml`);
  const checked = parseToolManifest(tool.text, { file, display: file }, 'project');
  if (!checked.ok) throw new KiwiError('INTERNAL', `the manifest made for ${tool.operation} is not valid, a bug in the importer: ${checked.issues.map((i) => i.message).join('; ')}`);
  const before = await readFile(file, 'utf8').catch(() => undefined);
  const text = sign ? signText('tool', tool.text, now) : tool.text;
  if (before !== undefined && stripSignatureLine('tool', before).text === tool.text && (sign ? before !== tool.text : before === tool.text)) return 'unchanged';
  await writeFile(file, text);
  return before === undefined ? 'created' : 'changed';
}

/** Files an earlier import wrote (their first line says so) whose operation this document no longer has. */
async function staleTools(dir: string, current: Set<string>): Promise<string[]> {
  const out: string[] = [];
  for (const file of (await readdir(dir)).sort()) {
    if (!file.endsWith('.yaml') || current.has(file)) continue;
    const text = await readFile(path.join(dir, file), 'utf8').catch(() => '');
    if (stripSignatureLine('tool', text).text.startsWith('# Imported from ')) out.push(file);
  }
  return out;
}
