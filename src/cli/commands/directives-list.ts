import path from 'node:path';
import { loadProjectRegistry } from '../../project/project-registry.js';
import type { Directive } from '../../registry/types.js';
import type { CliContext } from '../io.js';
import { projectOptions } from '../project-options.js';
import { shownPath } from '../../shown-path.js';

/**
 * `kiwi directives list`: every directive, the version that runs first and its older versions
 * (an annealed directive beside the one it improved) under it, with their files and signatures.
 */
export async function listDirectives(ctx: CliContext, values: { json?: boolean | undefined; project?: string | undefined }): Promise<number> {
  const options = projectOptions(ctx, values);
  const registry = await loadProjectRegistry({ projectDir: options.projectDir, env: ctx.env, ...(options.userDir ? { userDir: options.userDir } : {}) });
  const root = path.resolve(options.projectDir);
  const shown = (d: Directive): string => (d.source.tier === 'project' ? shownPath(root, d.source.path) : d.source.path);
  const names = [...registry.directives.keys()].sort();
  const rows = names.flatMap((name) => {
    const running = registry.directives.get(name) as Directive;
    return [running, ...(registry.olderDirectives?.get(name) ?? [])].map((d, i) => ({ name, version: d.version, runs: i === 0, tier: d.source.tier, file: shown(d), signed: d.signature !== null, description: d.description }));
  });
  if (values.json) ctx.io.out(JSON.stringify(rows));
  else if (rows.length === 0) ctx.io.out('no directives; they are Markdown files under .ai/directives/');
  else for (const r of rows) ctx.io.out(`${r.runs ? r.name : ' '.repeat(r.name.length)}  ${r.version}  ${r.runs ? 'runs ' : 'older'}  ${r.signed ? 'signed  ' : 'unsigned'}  ${r.file}${r.runs ? `  — ${r.description}` : ''}`);
  for (const issue of registry.errors.filter((e) => e.kind === 'directive')) ctx.io.err(`kiwi: ${issue.message}`);
  return 0;
}
