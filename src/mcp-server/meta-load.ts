/** The `load` meta-tool: one item of the local registry (a tool, directive, knowledge entry or pipeline), in full. */
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { compareVersions } from '../registry/directive-version.js';
import {
  checkProjectPath,
  findItem,
  itemIdSchema,
  itemTier,
  itemTypeSchema,
  normalizeItemType,
  projectPathSchema,
  textResult,
  type Item,
  type MetaContext,
  type MetaResult,
} from './meta-common.js';
import { directiveView, knowledgeText, knowledgeView, pipelineView, toolView } from './meta-views.js';
import { pipelineShape } from '../registry/pipeline-shape.js';

export const loadShape = {
  item_type: itemTypeSchema,
  item_id: itemIdSchema,
  source: z
    .enum(['project', 'user', 'registry'], { error: 'source must be "project", "user" or "registry"' })
    .optional()
    .describe('The tier to load from: "project", "user" or "registry" (the database tier; default: whichever holds the item, project first)'),
  destination: z
    .enum(['project', 'user'], { error: 'destination must be "project" or "user"' })
    .optional()
    .describe('Kiwi MCP copied items between tiers; here it may only name the tier the item is already in'),
  version: z.string({ error: 'version must be a string like "1.0.0"' }).max(64).optional().describe('The version to load: a directive may have older versions beside the one that runs (default: the one that runs)'),
  project_path: projectPathSchema,
};

type LoadArgs = z.output<z.ZodObject<typeof loadShape>>;

export async function load(ctx: MetaContext, args: LoadArgs): Promise<MetaResult> {
  const type = normalizeItemType(args.item_type);
  await checkProjectPath(ctx.project, args.project_path);
  const found = findItem(ctx.project, type, args.item_id);
  const tier = itemTier(found);
  if (args.source !== undefined && args.source !== tier) {
    const shadowed = ctx.project.registry.shadowed.find((s) => s.kind === type && s.id === args.item_id && s.loser.tier === args.source);
    throw new KiwiError(
      'INVALID_INPUT',
      shadowed
        ? `the ${args.source}-tier ${type} ${JSON.stringify(args.item_id)} (${shadowed.loser.path}) is shadowed by the ${tier}-tier one, which is what runs; loading a shadowed copy is not supported yet. Leave source out to load the ${tier}-tier one.`
        : `${type} ${JSON.stringify(args.item_id)} is in the ${tier} tier, not the ${args.source} tier; leave source out or pass source "${tier}".`,
    );
  }
  if (args.destination !== undefined && args.destination !== tier) {
    throw new KiwiError(
      'INVALID_INPUT',
      `copying items between tiers is not supported yet: ${type} ${JSON.stringify(args.item_id)} lives in the ${tier} tier and destination is "${args.destination}". Copy the file yourself (${found.item.source.path}), or leave destination out to read it.`,
    );
  }
  if (args.version !== undefined && args.version !== found.item.version) {
    const older = found.kind === 'directive' ? (ctx.project.registry.olderDirectives?.get(found.item.name) ?? []) : [];
    const wanted = older.find((d) => d.version === args.version || compareVersions(d.version, args.version as string) === 0);
    if (wanted !== undefined) return render(ctx, { kind: 'directive', item: wanted });
    if (older.length > 0) {
      throw new KiwiError('INVALID_INPUT', `directive ${JSON.stringify(args.item_id)} has no version ${args.version}; its versions are ${found.item.version} (the one that runs), ${older.map((d) => d.version).join(', ')}`);
    }
    throw new KiwiError(
      'INVALID_INPUT',
      `only version ${found.item.version} of ${type} ${JSON.stringify(args.item_id)} is loaded; leave version out to load it (the registry tier keeps every version it was pushed with: \`kiwi registry show ${args.item_id}\` lists them, and .ai/config/registry.yaml pins one).`,
    );
  }
  return render(ctx, found);
}

function render(ctx: MetaContext, found: Item): MetaResult {
  const project = ctx.project;
  if (found.kind === 'tool') {
    const view = toolView(project, found.item);
    return textResult(JSON.stringify(view, null, 2), { item_type: 'tool', item: view });
  }
  if (found.kind === 'directive') {
    const view = directiveView(project, found.item);
    const running = project.registry.directives.get(found.item.name);
    const older = project.registry.olderDirectives?.get(found.item.name) ?? [];
    const versions =
      running !== undefined && running !== found.item
        ? `; an older version: ${running.version} is the one that runs`
        : older.length > 0
          ? `; older versions beside it: ${older.map((d) => d.version).join(', ')} (load one with version)`
          : '';
    const header = `directive ${found.item.name} ${found.item.version} (${found.item.source.tier} tier${versions}): ${found.item.description}`;
    return textResult(`${header}\n\n${found.item.body}`, { item_type: 'directive', item: view });
  }
  if (found.kind === 'pipeline') {
    const view = pipelineView(project, found.item);
    const inputs = found.item.inputs.map((i) => `${i.name}${i.required ? ' (required)' : ''}`).join(', ') || 'none';
    const text = `pipeline ${found.item.name} ${found.item.version} (${found.item.source.tier} tier): ${found.item.description}\nstages: ${pipelineShape(found.item)}\ninputs: ${inputs}\nOn the gateway, execute(item_type="pipeline", action="run", item_id="${found.item.name}", parameters={inputs}) runs it.\n\n${JSON.stringify(view, null, 2)}`;
    return textResult(text, { item_type: 'pipeline', item: view });
  }
  const view = knowledgeView(project, found.item);
  return textResult(knowledgeText(found.item), { item_type: 'knowledge', item: view });
}
