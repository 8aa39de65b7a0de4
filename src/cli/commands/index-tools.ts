import path from 'node:path';
import { loadRegistry } from '../../registry/load-registry.js';
import { loadResolverConfig } from '../../resolver/resolver-config.js';
import { openResolverRuntime, type ResolverRuntime } from '../../resolver-runtime.js';
import type { CliContext } from '../io.js';
import { parseFlags } from '../parse-flags.js';
import { projectOptions } from '../project-options.js';

const USAGE = 'kiwi index [--project DIR]';

/** `kiwi index`: embeds every valid tool into `.ai/vectors/` (incremental by content hash). */
export async function indexCommand(ctx: CliContext): Promise<number> {
  const { values } = parseFlags(ctx.argv, { project: { type: 'string' } }, USAGE);
  const runtime = await openProjectResolver(ctx, values.project);
  try {
    const report = await runtime.sync({ onProgress: progressLine(ctx), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    ctx.io.out(
      `indexed ${runtime.toolCount} tools with ${runtime.embedderId} in ${(report.ms / 1000).toFixed(1)} s: ${report.added} added, ${report.updated} updated, ${report.removed} removed, ${report.unchanged} unchanged${report.rebuilt ? ` (rebuilt: ${report.reason})` : ''}`,
    );
    return 0;
  } finally {
    await runtime.close();
  }
}

/** Registry + resolver config + LanceDB index of a project, as `kiwi index` and `kiwi resolve` use them. */
export async function openProjectResolver(ctx: CliContext, projectFlag: string | undefined): Promise<ResolverRuntime> {
  const options = projectOptions(ctx, { project: projectFlag });
  const registry = await loadRegistry({ projectDir: options.projectDir, ...(options.userDir ? { userDir: options.userDir } : {}) });
  if (registry.errors.length > 0) ctx.io.err(`kiwi: ${registry.errors.length} invalid items are not indexed (run \`kiwi tools validate\`)`);
  const config = await loadResolverConfig(path.join(options.projectDir, '.ai', 'config', 'resolver.yaml'), { env: ctx.env, root: options.projectDir });
  return openResolverRuntime({
    tools: registry.tools.values(),
    indexDir: path.join(options.projectDir, '.ai', 'vectors'),
    embedder: config.embedder,
    settings: config.settings,
    argumentModel: config.argumentModel,
    log: (m) => ctx.io.err(`kiwi: ${m}`),
  });
}

function progressLine(ctx: CliContext): (done: number, total: number) => void {
  let last = 0;
  return (done, total) => {
    const now = Date.now();
    if (done === total || now - last > 1000) {
      last = now;
      ctx.io.err(`embedding tools: ${done}/${total}`);
    }
  };
}
