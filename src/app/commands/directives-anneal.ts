import path from 'node:path';
import { annealDirective } from '../../anneal/anneal-directive.js';
import { loadGatewayConfig } from '../gateway-config.js';
import { tierModelOf } from '../tier-model.js';
import { createUpstreams } from '../upstreams.js';
import { openThreadStore } from '../state-backends.js';
import { openProject } from '../../project/open-project.js';
import type { CliContext } from '../../cli/io.js';
import { projectOptions } from '../../cli/project-options.js';
import { shownPath } from '../../base/shown-path.js';

/**
 * `kiwi directives anneal NAME`: asks the model the directive's tier maps to (through the upstreams
 * of .ai/config/gateway.yaml) for a version that avoids its recent failures, and writes it, signed,
 * beside the old file. Prints what changed and where it went. Exit 0 written, 1 refused.
 */
export async function annealCommand(ctx: CliContext, name: string, values: { model?: string | undefined; thread?: string | undefined; json?: boolean | undefined; project?: string | undefined }): Promise<number> {
  const options = projectOptions(ctx, values);
  const project = await openProject(options);
  try {
    const config = await loadGatewayConfig(path.join(project.root, '.ai', 'config', 'gateway.yaml'), { env: options.env, root: project.root });
    const upstreams = createUpstreams(config, { http: project.http });
    const threads = await openThreadStore(project.root, options.env);
    try {
      const outcome = await annealDirective(
        { threads: threads.store, registry: project.registry, route: (model) => upstreams.route(model), tierModel: tierModelOf(config) },
        { name, ...(values.thread ? { thread: values.thread } : {}), ...(values.model ? { model: values.model } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) },
      );
      if (values.json) {
        ctx.io.out(JSON.stringify(outcome, null, 2));
        return 0;
      }
      const shown = (file: string): string => shownPath(project.root, file);
      ctx.io.out(`annealed ${name} on ${outcome.model} from ${outcome.threads.length} failed thread(s): ${outcome.threads.map((t) => `${t.id} (${t.failure})`).join(', ')}`);
      for (const line of outcome.summary) ctx.io.out(`  ${line}`);
      ctx.io.out(`wrote ${shown(outcome.file)} (signed), beside ${shown(outcome.previous.file)}, which is unchanged; version ${outcome.version} now runs, and load can still read ${outcome.previous.version} by its version`);
      return 0;
    } finally {
      await threads.close();
      await upstreams.close();
    }
  } finally {
    await project.close();
  }
}
