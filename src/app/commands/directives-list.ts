import path from 'node:path';
import type { AnnealCounts } from '../../anneal/anneal-on-failure.js';
import { loadProjectRegistry } from '../../project/project-registry.js';
import type { Directive } from '../../registry/types.js';
import type { CliContext } from '../../cli/io.js';
import { projectOptions } from '../../cli/project-options.js';
import { shownPath } from '../../base/shown-path.js';

/**
 * `kiwi directives list`: every directive, the version that runs first and its older versions
 * (an annealed directive beside the one it improved) under it, with their files and signatures.
 */
export async function listDirectives(
  ctx: CliContext,
  values: { json?: boolean | undefined; project?: string | undefined },
  /** Annealing on failure, per directive (anneal-on-failure.ts): shown when a directive has any. */
  annealed: (root: string) => Promise<ReadonlyMap<string, AnnealCounts>>,
): Promise<number> {
  const options = projectOptions(ctx, values);
  const registry = await loadProjectRegistry({ projectDir: options.projectDir, env: ctx.env, ...(options.userDir ? { userDir: options.userDir } : {}) });
  const root = path.resolve(options.projectDir);
  const shown = (d: Directive): string => (d.source.tier === 'project' ? shownPath(root, d.source.path) : d.source.path);
  const names = [...registry.directives.keys()].sort();
  const counts = await annealed(root);
  const rows = names.flatMap((name) => {
    const running = registry.directives.get(name) as Directive;
    const anneal = counts.get(name);
    return [running, ...(registry.olderDirectives?.get(name) ?? [])].map((d, i) => ({ name, version: d.version, runs: i === 0, tier: d.source.tier, file: shown(d), signed: d.signature !== null, description: d.description, ...(i === 0 && anneal ? { annealed_on_failure: anneal } : {}) }));
  });
  if (values.json) ctx.io.out(JSON.stringify(rows));
  else if (rows.length === 0) ctx.io.out('no directives; they are Markdown files under .ai/directives/');
  else for (const r of rows) ctx.io.out(`${r.runs ? r.name : ' '.repeat(r.name.length)}  ${r.version}  ${r.runs ? 'runs ' : 'older'}  ${r.signed ? 'signed  ' : 'unsigned'}  ${r.file}${r.runs ? `  — ${r.description}` : ''}${r.annealed_on_failure ? `  (annealed on failure: ${r.annealed_on_failure.retried} retried, ${r.annealed_on_failure.succeeded} succeeded)` : ''}`);
  for (const issue of registry.errors.filter((e) => e.kind === 'directive')) ctx.io.err(`kiwi: ${issue.message}`);
  return 0;
}
