import { execFile } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './temp-project.js';

const run = promisify(execFile);
const INSPECTOR = path.join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');

/**
 * The official MCP Inspector's CLI (`mcp-inspector --cli`, a devDependency) run once: `args` are
 * its options (`--method tools/list`, …), `target` the server (a URL, or the command line of a
 * stdio server). Its catalog and home are a folder of its own, never the user's. Resolves with
 * its JSON answer; rejects with its stderr when it fails.
 */
export async function inspect(args: string[], target: string[]): Promise<Record<string, unknown>> {
  const home = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-inspector-')));
  const env = { ...process.env, HOME: home, MCP_CATALOG_PATH: path.join(home, 'mcp.json') };
  // `--` ends the inspector's options: a variadic one (--tool-arg) would take the target's words.
  const { stdout } = await run(process.execPath, [INSPECTOR, '--cli', ...args, '--', ...target], { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as Record<string, unknown>;
}

export const toolNames = (answer: Record<string, unknown>): string[] => ((answer['tools'] as { name: string }[] | undefined) ?? []).map((t) => t.name);
