import { cpSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { demoTemplate } from './run-resources.js';
import { REPO_ROOT } from './temp-project.js';

/**
 * A throwaway copy of the demo `.ai/` (without its generated logs and index), with
 * node_modules linked so the MCP servers from npm start, and a four-word README.md.
 *
 * In the test run it is a copy of the global setup's (test/setup/global-setup.ts): the same
 * files, plus the search index built from them (`.ai/vectors`) and a migrated, empty kernel
 * database (`.ai/state/kernel`), which a gateway would otherwise spend seconds making; a
 * gateway opened on it brings the index in line with any tool a test adds, as on a restart.
 */
export function copyDemoProject(prefix = 'kiwi-gateway-'): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  const template = demoTemplate();
  if (template !== undefined) {
    cpSync(template, dir, { recursive: true });
    return dir;
  }
  const generated = ['logs', 'vectors', 'state', 'threads', 'notes'].map((d) => path.join(REPO_ROOT, '.ai', d));
  cpSync(path.join(REPO_ROOT, '.ai'), path.join(dir, '.ai'), { recursive: true, filter: (src) => !generated.some((g) => src.startsWith(g)) });
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  writeFileSync(path.join(dir, 'README.md'), 'one two three\nfour\n');
  return dir;
}

/** Adds tool ids to the copy's policy `tools:` list. */
export function allowTools(dir: string, ids: string[]): void {
  const policy = path.join(dir, '.ai', 'config', 'policy.yaml');
  writeFileSync(policy, readFileSync(policy, 'utf8').replace('tools: [', `tools: [${ids.join(', ')}, `));
}
