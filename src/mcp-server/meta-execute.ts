/**
 * The `execute` meta-tool. `run`: a tool runs through the tool proxy (policy, audit, executor
 * chain: never around it); a directive runs as a thread where the gateway serves it, and comes
 * back as steps for the calling agent to follow elsewhere, as Kiwi MCP did; knowledge comes back
 * as its content. A thread's `status`, `stream`, `cancel` and `resume` take its id (meta-thread.ts).
 */
import { z } from 'zod';
import { CREATE_TOOL } from '../registry/item-proposal.js';
import { isReadOnlyKnowledge, ROLLBACK_TOOL } from '../registry/item-tools.js';
import type { Directive, Knowledge } from '../registry/types.js';
import {
  callerFields,
  checkProjectPath,
  proxyCall,
  errorResult,
  findItem,
  itemIdSchema,
  itemTypeSchema,
  normalizeItemType,
  outcomeResult,
  preview,
  projectPathSchema,
  textResult,
  type ItemType,
  type MetaContext,
  type MetaResult,
} from './meta-common.js';
import { runDirectiveThread, threadAction, THREAD_ACTIONS } from './meta-thread.js';
import { executePipeline } from './meta-pipeline.js';
import { directiveSteps } from '../registry/directive-steps.js';
import { directiveView, knowledgeText, knowledgeView, toolView } from './meta-views.js';

const UNSUPPORTED =
  'publish, delete, update, sign and link are not supported yet ("create" writes a new version; `kiwi registry push` publishes)';

export const executeShape = {
  item_type: itemTypeSchema,
  action: z
    .enum(['run', 'rollback', 'create', ...THREAD_ACTIONS], {
      error: (issue) =>
        issue.input === undefined
          ? 'action is required: "run" runs an item; "create" proposes a new one; "rollback" restores a checkpoint; "status", "stream", "cancel" and "resume" act on a directive\'s thread'
          : `action ${preview(issue.input)} is not supported: "run", "create" and "rollback" are, and ${THREAD_ACTIONS.map((a) => `"${a}"`).join(', ')} for a directive's thread; ${UNSUPPORTED}`,
    })
    .describe('"run": a tool runs, a directive runs as a thread (or returns its steps to follow), knowledge returns its content. "create": a new tool, directive or knowledge entry (or a new version of one an agent created), item_id its id, parameters {content: its manifest or Markdown, files?: {name: text} a tool\'s scripts, tier?: "project" | "registry"}; it is checked, signed, and lands once the policy or a person allows it. "rollback": item_id is a checkpoint id (a call\'s `checkpoint`), restored over the work tree. "status" | "stream" | "cancel" | "resume": item_id is a thread id'),
  item_id: itemIdSchema,
  parameters: z
    .record(z.string(), z.unknown(), { error: 'parameters must be an object of named values, e.g. {"path": "README.md"}' })
    .optional()
    .describe("A tool's arguments, or a directive's inputs, as an object"),
  async: z
    .boolean({ error: 'async must be true or false' })
    .optional()
    .describe('With a directive\'s or a pipeline\'s "run" or "resume": answer the thread id (a pipeline\'s run id) at once and let it run; follow it with "status" (and a thread\'s with "stream")'),
  environment: z
    .string({ error: 'environment must be the name of a file in .ai/environments/, e.g. "review_src"' })
    .max(64)
    .optional()
    .describe('With a directive\'s "run" on the gateway: start it from this environment (.ai/environments/NAME.yaml), whose directive it must be: its pinned version, inputs, tools and knowledge'),
  project_path: projectPathSchema,
};

type ExecuteArgs = z.output<z.ZodObject<typeof executeShape>>;

export async function execute(ctx: MetaContext, args: ExecuteArgs, signal?: AbortSignal): Promise<MetaResult> {
  const type = normalizeItemType(args.item_type);
  await checkProjectPath(ctx.project, args.project_path);
  if (type === 'pipeline') return executePipeline(ctx, args, signal);
  const parameters = args.parameters ?? {};
  const options = { ...(args.async ? { async: true } : {}), ...(signal ? { signal } : {}) };
  if (args.action === 'rollback') return rollback(ctx, args, signal);
  if (args.action === 'create') return create(ctx, type, args, signal);
  if (args.action !== 'run') {
    if (type !== 'directive') return errorResult('INVALID_INPUT', `action "${args.action}" acts on a directive's thread: call it with item_type "directive" and the thread id as item_id`);
    if (ctx.threads === undefined) return errorResult('INVALID_INPUT', `action "${args.action}" needs the gateway (\`kiwi serve\`'s /mcp), which runs directives as threads; here a directive's run returns its steps`);
    return threadAction(ctx, ctx.threads, args.action, args.item_id, parameters, options);
  }
  if (args.environment !== undefined && (type !== 'directive' || ctx.threads === undefined)) {
    return errorResult('INVALID_INPUT', 'environment is for a directive\'s "run" on the gateway (`kiwi serve`\'s /mcp), which runs it as a thread; elsewhere use `kiwi env run NAME`');
  }
  if (args.async && type !== 'directive') return errorResult('INVALID_INPUT', 'async is for a directive\'s run: a tool or knowledge entry answers when it is done');
  if (type === 'tool') {
    const readable = readableTool(ctx, args.item_id, parameters);
    if (readable !== undefined) return readable;
    const outcome = await proxyCall(ctx, {
      target: { tool: args.item_id, args: parameters },
      caller: callerFields(ctx),
      ...(signal ? { run: { signal } } : {}),
    });
    return outcomeResult(outcome);
  }
  const found = findItem(ctx.project, type, args.item_id);
  if (found.kind === 'directive') {
    if (ctx.threads !== undefined) return runDirectiveThread(ctx, ctx.threads, found.item, parameters, { ...options, ...(args.environment === undefined ? {} : { environment: args.environment }) });
    if (args.async) return errorResult('INVALID_INPUT', 'async needs the gateway (`kiwi serve`\'s /mcp), which runs directives as threads; here a directive\'s run returns its steps');
    return runDirective(ctx, found.item, parameters);
  }
  if (found.kind === 'knowledge') return runKnowledge(ctx, found.item);
  // findItem returns the kind it was asked for; a tool was handled above.
  return errorResult('INTERNAL', `unexpected ${found.kind} for item_type ${type}`);
}

/**
 * Restores one of the caller's checkpoints through the tool proxy, as the tool ROLLBACK_TOOL: the
 * policy's grant, hooks, approvals and audit apply as to any call; the checkpointer refuses one
 * that is not the caller's as not found.
 */
async function rollback(ctx: MetaContext, args: ExecuteArgs, signal: AbortSignal | undefined): Promise<MetaResult> {
  if (args.async) return errorResult('INVALID_INPUT', 'async is for a directive\'s run: a rollback answers when it is done');
  if (args.parameters !== undefined && Object.keys(args.parameters).length > 0) return errorResult('INVALID_INPUT', 'a rollback takes no parameters: the checkpoint id is item_id');
  const outcome = await proxyCall(ctx, { target: { tool: ROLLBACK_TOOL, item: 'checkpoint', args: { checkpoint: args.item_id } }, caller: callerFields(ctx), ...(signal ? { run: { signal } } : {}) });
  return outcomeResult(outcome);
}

/**
 * Proposes an item through the tool proxy, as the tool CREATE_TOOL: checked and signed there, then
 * the policy's grant or a person's approval, hooks and audit, as for any call (plan-creation.ts, authorize.ts).
 */
async function create(ctx: MetaContext, type: ItemType, args: ExecuteArgs, signal: AbortSignal | undefined): Promise<MetaResult> {
  if (args.async || args.environment !== undefined) return errorResult('INVALID_INPUT', 'a creation takes item_type, item_id and parameters {content, files?, tier?}; it answers when the item has landed or was refused');
  const outcome = await proxyCall(ctx, { target: { tool: CREATE_TOOL, item: 'creation', args: { item_type: type, item_id: args.item_id, ...args.parameters } }, caller: callerFields(ctx), ...(signal ? { run: { signal } } : {}) });
  return outcomeResult(outcome);
}

function runDirective(ctx: MetaContext, directive: Directive, provided: Record<string, unknown>): MetaResult {
  const inputs = directive.inputs ?? [];
  const missing = inputs.filter((input) => input.required && isBlank(provided[input.name]));
  if (missing.length > 0) {
    const example = `parameters={${missing.map((m) => `"${m.name}": …`).join(', ')}}`;
    return errorResult(
      'INVALID_INPUT',
      `directive ${directive.name} needs ${missing.map((m) => `${m.name} (${m.description || m.type})`).join(', ')}; call it again with ${example}`,
      { missing_inputs: missing, inputs },
    );
  }
  const steps = directiveSteps(directive);
  const view = directiveView(ctx.project, directive);
  const text = directiveInstructions(directive, provided);
  return textResult(text, {
    status: 'ready',
    ...view,
    process: steps,
    provided_inputs: provided,
    instructions: 'Follow each process step in order. Use provided_inputs for any matching input names.',
  });
}

/** What an agent is told to do for a directive it follows itself: its steps, the inputs given, its Markdown. */
export function directiveInstructions(directive: Directive, provided: Record<string, unknown>): string {
  const inputs = directive.inputs ?? [];
  const steps = directiveSteps(directive);
  const lines = [`directive ${directive.name} ${directive.version}: ${directive.description}`];
  const given = Object.entries(provided).filter(([name]) => inputs.some((i) => i.name === name));
  if (given.length > 0) lines.push('', 'inputs:', ...given.map(([name, value]) => `- ${name} = ${preview(value)}`));
  if (steps.length > 0) {
    lines.push('', 'steps:', ...steps.map((s, i) => `${i + 1}. ${s.name}: ${s.description}${s.action ? ` (${s.action})` : ''}`));
  }
  lines.push(
    '',
    'Follow each step in order, using the inputs above. Run tools with execute(item_type="tool", action="run", item_id=ID, parameters={...}); every call is checked against the project policy.',
    '',
    directive.body,
  );
  return lines.join('\n');
}

function runKnowledge(ctx: MetaContext, entry: Knowledge): MetaResult {
  return textResult(knowledgeText(entry), { status: 'ready', ...knowledgeView(ctx.project, entry) });
}

/**
 * Kiwi's knowledge and directives written as tool manifests: knowledge comes back as what the
 * manifest says about it (it runs nothing), a directive as the steps of the loaded directive of that
 * name, like the items themselves. Anything else (a directive tool without its directive) goes to
 * the proxy, which says why it cannot run.
 */
function readableTool(ctx: MetaContext, id: string, parameters: Record<string, unknown>): MetaResult | undefined {
  const tool = ctx.project.registry.tools.get(id);
  if (tool !== undefined && isReadOnlyKnowledge(tool)) {
    const view = toolView(ctx.project, tool);
    const source = typeof tool.config['source_url'] === 'string' ? `\nsource: ${tool.config['source_url']}` : '';
    return textResult(`knowledge ${tool.id} ${tool.version}: ${tool.description}${source}`, { status: 'ready', ...view });
  }
  const directive = tool?.type === 'directive' ? ctx.project.registry.directives.get(id) : undefined;
  return directive === undefined ? undefined : runDirective(ctx, directive, parameters);
}

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}
