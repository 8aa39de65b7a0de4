import { loadProjectRegistry } from '../../project/project-registry.js';
import type { Registry } from '../../registry/load-registry.js';
import { openProjectResolverRuntime, type ResolverRuntime } from '../../resolver/resolver-runtime.js';
import { createIndexProgress } from '../../cli/index-progress.js';
import type { CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { INDEX_HELP } from './index-tools-help.js';
import { projectOptions } from '../../cli/project-options.js';

/** `kiwi index`: embeds every valid tool, directive and knowledge entry into `.ai/vectors/` (incremental by content hash). */
export async function indexCommand(ctx: CliContext): Promise<number> {
  const { values } = parseFlags(ctx.argv, INDEX_HELP);
  const runtime = await openProjectResolver(ctx, values.project);
  try {
    const report = await runtime.sync({ progress: createIndexProgress(ctx.io, { summary: false }), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    ctx.io.out(
      `indexed ${runtime.toolCount} tools${runtime.itemCount > 0 ? ` and ${runtime.itemCount} directives and knowledge entries` : ''} with ${runtime.embedderId} in ${(report.ms / 1000).toFixed(1)} s: ${report.added} added, ${report.updated} updated, ${report.removed} removed, ${report.unchanged} unchanged${report.rebuilt ? ` (rebuilt: ${report.reason})` : ''}`,
    );
    return 0;
  } finally {
    await runtime.close();
  }
}

/** Registry + resolver config + LanceDB index of a project, as `kiwi index` and `kiwi resolve` use them. */
export async function openProjectResolver(ctx: CliContext, projectFlag: string | undefined, check: { needsAi?: boolean } = {}): Promise<ResolverRuntime> {
  const options = projectOptions(ctx, { project: projectFlag }, check);
  const registry = await loadProjectRegistry({ projectDir: options.projectDir, env: ctx.env, ...(options.userDir ? { userDir: options.userDir } : {}) });
  return openRegistryResolver(ctx, options.projectDir, registry);
}

/** The resolver config and LanceDB index of the project at `root`, over a registry already loaded; invalid items are named, not indexed. */
export function openRegistryResolver(ctx: CliContext, root: string, registry: Registry, signal?: AbortSignal): Promise<ResolverRuntime> {
  if (registry.errors.length > 0) ctx.io.err(`kiwi: ${registry.errors.length} invalid items are not indexed (run \`kiwi tools validate\`)`);
  return openProjectResolverRuntime({
    root,
    tools: registry.tools.values(),
    directives: registry.directives.values(),
    knowledge: registry.knowledge.values(),
    env: ctx.env,
    log: (m) => ctx.io.err(`kiwi: ${m}`),
    ...(signal ? { signal } : {}),
  });
}
