import path from 'node:path';
import { isKiwiError } from '../../base/errors.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { ENV_HELP } from './env-help.js';
import { projectOptions } from '../../cli/project-options.js';
import { checkInputs } from '../../registry/directive-input-values.js';
import { checkEnvironmentName, listEnvironments, readEnvironment, writeEnvironment } from '../../registry/environment-folder.js';
import type { EnvironmentFile } from '../../registry/environment-file.js';
import { currentItems, pinnedItems, pinOf } from '../../registry/environment-pins.js';
import { loadProjectRegistry } from '../../project/project-registry.js';
import type { Registry } from '../../registry/types.js';
import { parseInputs, runThreadHere } from './directives.js';

const USAGE = ENV_HELP.usage;

/**
 * `kiwi env`: environments (`.ai/environments/`), a directive saved with its inputs, the tools
 * and knowledge it gets up front and its model tier, each item pinned at its version. `run` starts
 * a thread from one, here, as `kiwi directives run` does; exit 0 when it completed, 1 otherwise.
 */
export async function envCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, ENV_HELP);
  const [action, name, ...rest] = positionals;
  if (rest.length > 0 || action === undefined) throw new UsageError(`usage: ${USAGE}`);
  const onlyFor = (flags: (keyof typeof values)[], what: string): void => {
    const stray = flags.filter((f) => values[f] !== undefined);
    if (stray.length > 0) throw new UsageError(`--${stray.join(', --')} ${stray.length === 1 ? 'is' : 'are'} for ${what}`);
  };
  const options = projectOptions(ctx, values);
  const root = path.resolve(options.projectDir);
  const registry = (): Promise<Registry> => loadProjectRegistry({ projectDir: options.projectDir, env: ctx.env, ...(options.userDir ? { userDir: options.userDir } : {}) });
  if (action === 'list' && name === undefined) {
    onlyFor(['directive', 'input', 'tool', 'knowledge', 'tier', 'model', 'description', 'force'], 'save and run');
    return list(ctx, root, await registry(), values.json === true);
  }
  if (name === undefined) throw new UsageError(`usage: ${USAGE}`);
  checkEnvironmentName(name);
  if (action === 'show') {
    onlyFor(['directive', 'input', 'tool', 'knowledge', 'tier', 'model', 'description', 'force'], 'save and run');
    return show(ctx, await readEnvironment(root, name), await registry(), values.json === true);
  }
  if (action === 'save') {
    if (values.directive === undefined) throw new UsageError(`save needs --directive NAME; usage: ${USAGE}`);
    if (values.tier !== undefined && values.model !== undefined) throw new UsageError('give --tier or --model, not both');
    const items = currentItems(await registry(), { directive: values.directive, tools: values.tool ?? [], knowledge: values.knowledge ?? [] });
    // Checked as a run checks them, except that a required input may wait for the run.
    const optional = { ...items.directive, inputs: items.directive.inputs?.map((i) => ({ ...i, required: false })) };
    const inputs = checkInputs(optional, parseInputs(values.input ?? []));
    const file = await writeEnvironment(
      root,
      {
        name,
        description: values.description ?? '',
        directive: { name: items.directive.name, ...pinOf(items.directive) },
        inputs,
        tools: items.tools.map((t) => ({ id: t.id, ...pinOf(t) })),
        knowledge: items.knowledge.map((k) => ({ id: k.id, ...pinOf(k) })),
        ...(values.tier === undefined ? {} : { modelTier: values.tier }),
        ...(values.model === undefined ? {} : { model: values.model }),
        savedAt: new Date().toISOString(),
      },
      values.force === true,
    );
    ctx.io.out(`saved ${file}: ${items.directive.name} ${items.directive.version}, ${items.tools.length} tool(s), ${items.knowledge.length} knowledge entr${items.knowledge.length === 1 ? 'y' : 'ies'}; \`kiwi env run ${name}\` starts a thread from it`);
    return 0;
  }
  if (action !== 'run') throw new UsageError(`usage: ${USAGE}`);
  onlyFor(['directive', 'tool', 'knowledge', 'tier', 'description', 'force'], 'save');
  const env = await readEnvironment(root, name);
  return runThreadHere(ctx, options, { directive: env.directive.name, environment: name, inputs: parseInputs(values.input ?? []) }, values);
}

/** Whether the environment's items are still as it pinned them: undefined when they are, else why not. */
function drift(env: EnvironmentFile, registry: Registry): string | undefined {
  try {
    pinnedItems(registry, env);
    return undefined;
  } catch (error) {
    if (isKiwiError(error)) return error.message;
    throw error;
  }
}

async function list(ctx: CliContext, root: string, registry: Registry, json: boolean): Promise<number> {
  const { environments, errors } = await listEnvironments(root);
  const rows = environments.map((e) => ({ name: e.name, directive: e.directive.name, version: e.directive.version, tools: e.tools.map((t) => t.id), knowledge: e.knowledge.map((k) => k.id), description: e.description, changed: drift(e, registry) ?? null }));
  if (json) ctx.io.out(JSON.stringify(rows));
  else if (rows.length === 0) ctx.io.out('no environments; `kiwi env save NAME --directive D --tool T…` makes one in .ai/environments/');
  else for (const r of rows) ctx.io.out(`${r.name}  ${r.directive} ${r.version}  ${r.tools.length} tool(s)  ${r.changed === null ? 'as saved' : 'CHANGED since saved (`kiwi env show` says what)'}${r.description ? `  — ${r.description}` : ''}`);
  for (const error of errors) ctx.io.err(`kiwi: ${error}`);
  return errors.length > 0 ? 1 : 0;
}

function show(ctx: CliContext, env: EnvironmentFile, registry: Registry, json: boolean): number {
  const changed = drift(env, registry);
  const { label: _label, ...file } = env;
  if (json) {
    ctx.io.out(JSON.stringify({ ...file, file: env.label.display, changed: changed ?? null }, null, 2));
    return changed === undefined ? 0 : 1;
  }
  ctx.io.out(`${env.name} (${env.label.display})${env.description ? `: ${env.description}` : ''}`);
  ctx.io.out(`  directive  ${env.directive.name} ${env.directive.version}`);
  if (Object.keys(env.inputs).length > 0) ctx.io.out(`  inputs     ${JSON.stringify(env.inputs)}`);
  for (const t of env.tools) ctx.io.out(`  tool       ${t.id} ${t.version}`);
  for (const k of env.knowledge) ctx.io.out(`  knowledge  ${k.id} ${k.version}`);
  if (env.modelTier ?? env.model) ctx.io.out(`  model      ${env.model ?? `tier ${env.modelTier}`}`);
  ctx.io.out(changed === undefined ? '  every item is as it was saved' : `  ${changed}`);
  return changed === undefined ? 0 : 1;
}
