/**
 * The `help` meta-tool: short guidance an agent reads once, per topic; or, with an `action`, the
 * agent's help signal (stuck, escalate, checkpoint), audited and seen by the hooks.
 */
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { HELP_ACTIONS, helpReplyText, helpSignal, type HelpAction } from '../proxy/help-signal.js';
import { callerFields, textResult, type MetaContext, type MetaResult } from './meta-common.js';

export const HELP_TOPICS = ['overview', 'search', 'load', 'execute', 'resolve', 'directives', 'tools', 'knowledge', 'pipelines'] as const;
export type HelpTopic = (typeof HELP_TOPICS)[number];

export const helpShape = {
  topic: z
    .enum(HELP_TOPICS, { error: `topic must be one of ${HELP_TOPICS.join(', ')}` })
    .optional()
    .describe(`One of ${HELP_TOPICS.join(', ')} (default overview)`),
  action: z
    .enum(HELP_ACTIONS, { error: `action must be one of ${HELP_ACTIONS.join(', ')}` })
    .optional()
    .describe('Signal instead of reading guidance: "stuck" (you cannot go on this way), "escalate" (a person must decide), "checkpoint" (progress worth recording). Give a message.'),
  message: z
    .string({ error: 'message must be a string' })
    // Bounded before it is cut to MAX_HELP_MESSAGE_CHARS: a megabyte of message is a mistake, not a signal.
    .max(64 * 1024, 'message is longer than 65536 characters; say it in a paragraph')
    .optional()
    .describe('With action: what is wrong, what a person must decide, or what is done (cut to 2000 characters)'),
};

const TEXT: Record<HelpTopic, string> = {
  overview: `Kiwi Gateway: a few meta-tools stand in for every tool, directive and knowledge entry of this project's .ai/ folder (project tier, then ~/.ai, then the registry tier in the database).
- search: find items by what they do
- load: read one item in full (a tool's parameters, a directive's steps, a knowledge entry)
- execute: run a tool, or get a directive's steps / a knowledge entry's content; on the gateway, run a directive as a thread or a pipeline of them
- resolve: say what you want in words; the gateway picks the tool (or directive, or knowledge entry) and its arguments, and runs it
- help: this text; topics: ${HELP_TOPICS.join(', ')}; or help(action="stuck"|"escalate"|"checkpoint", message=...) to signal the people running this project
Every tool call passes the project's policy (.ai/config/policy.yaml, default deny) and is audited; a denial comes back as an error result with the reason.`,
  search: `search(item_type, query, limit?, source?)
- item_type: "tool" | "directive" | "knowledge" | "pipeline" ("script" = tool)
- query: words describing what you look for
- limit: 1-50, default 10
- source: "all" (default: every tier) | "local" (project and user tiers) | "project" | "user" | "registry" (the database tier)
Tools, directives and knowledge are ranked the way resolve picks them: meaning (embeddings) and keywords (BM25), fused on one scale.
Example: search(item_type="tool", query="read a file")`,
  load: `load(item_type, item_id, source?, destination?, version?)
Returns the item in full: a tool's manifest with its parameter schema, a directive's metadata, inputs, steps and Markdown, a knowledge entry's front matter and body, a pipeline's inputs and stages.
source picks the tier ("project" | "user" | "registry"); copying between tiers (a destination other than where the item lives) is not supported yet.
Example: load(item_type="tool", item_id="read_file")`,
  execute: `execute(item_type, action="run", item_id, parameters?, async?)
- tool: runs it through the policy-checked tool proxy with parameters as its arguments
- directive: on the gateway, runs as a thread (only its tools, its limits, its model; parameters are its inputs) and answers {thread, status, steps_taken, result}; each line the thread writes comes as a progress notification. With async=true it answers the thread id at once. Elsewhere (kiwi mcp on stdio) it returns its steps for you to follow
- knowledge: returns its content
- pipeline: on the gateway, runs its stages (each a directive's thread) and answers {run, status, stages}; see help("pipelines")
A thread's id as item_id (item_type="directive"): action="status" says where it stands; "stream" returns its lines from parameters.after (waiting up to parameters.wait_s, default 30, for new ones); "cancel" stops it; "resume" goes on with one that stopped (parameters.message: a word for it).
publish, delete, create, update and sign are not supported yet.
Example: execute(item_type="tool", action="run", item_id="read_file", parameters={"path": "README.md"})`,
  resolve: `resolve(intent, execute?, context?)
Say what you want in plain words with the values it needs; the gateway picks the tool, fills its arguments and (unless execute=false) runs it through the policy.
An intent may also name a directive ("run the review checklist", with its inputs as the values) or a knowledge entry ("load knowledge about rate limits"): the words "directive", "checklist", "knowledge" pick that kind. Where the gateway runs threads, a directive runs as one (the policy must list its name in tools); a knowledge entry's content is the result.
When it cannot tell, the answer is "unresolved" with candidates and the missing arguments: say it again more precisely, or call execute with an explicit tool.
Example: resolve(intent="read the file docs/setup.md")`,
  directives: `Directives are Markdown files under .ai/directives/ with one <directive name version> XML block: metadata (description, category, model tier, limits, permissions), inputs, and process steps.
execute(item_type="directive", action="run", item_id=NAME, parameters={inputs}) runs it as a thread on the gateway (see help("execute")); on stdio it returns the steps, and you follow them, calling tools with execute or resolve.`,
  tools: `Tools are YAML manifests under .ai/tools/: tool_id, tool_type, executor, description, parameters, config. Each runs through a chain down to a subprocess or an HTTP request, and only if the project policy lists it.
search(item_type="tool", ...) finds them; load shows their parameters; execute or resolve runs them.`,
  pipelines: `Pipelines are YAML files under .ai/pipelines/: directives run one after the other (or side by side in a parallel group), each stage a thread handed the earlier stages' results.
search(item_type="pipeline", query=...) finds them; load(item_type="pipeline", item_id=NAME) shows their inputs and stages.
On the gateway, execute(item_type="pipeline", action="run", item_id=NAME, parameters={inputs}) runs one as you, with your rights narrowed by the pipeline's and each stage's directive's, and answers {run, status, stages}; with async=true it answers {run} once its first stage started.
With the run id as item_id: action="status" says where it stands (each stage's thread, status and result); "cancel" stops it; "resume" goes on with one that stopped (completed stages are reused). Only your own runs are found.
Off the gateway (kiwi mcp on stdio) pipelines do not run: use \`kiwi pipelines run NAME --input KEY=VALUE\`.`,
  knowledge: `Knowledge entries are Markdown files under .ai/knowledge/ with YAML front matter (id, title, entry_type, version, category, tags).
search(item_type="knowledge", query=...) finds them; load or execute(action="run") returns the content.`,
};

export async function help(ctx: MetaContext, args: { topic?: HelpTopic | undefined; action?: HelpAction | undefined; message?: string | undefined }, signal?: AbortSignal): Promise<MetaResult> {
  if (args.action === undefined) {
    if (args.message !== undefined) throw new KiwiError('INVALID_INPUT', 'message is only read with an action: add action="stuck", "escalate" or "checkpoint", or leave message out to read guidance');
    const chosen = args.topic ?? 'overview';
    return textResult(TEXT[chosen], { topic: chosen, topics: [...HELP_TOPICS] });
  }
  if (args.topic !== undefined) throw new KiwiError('INVALID_INPUT', 'topic and action do not go together: a topic reads guidance, an action signals');
  const given = helpSignal(args.action, args.message ?? '');
  if (given.message === '') throw new KiwiError('INVALID_INPUT', `action "${args.action}" needs a message: say what is wrong, what a person must decide, or what is done`);
  const outcome = await ctx.project.proxy.help({ caller: callerFields(ctx), ...(signal ? { run: { signal } } : {}) }, given);
  if (outcome.refused !== undefined) throw new KiwiError('RATE_LIMITED', `the ${given.action} signal was not recorded: ${outcome.refused}`);
  return textResult(helpReplyText(given.action, outcome, 'mcp'), { action: given.action, message: given.message, call_id: outcome.callId, ...(outcome.checkpoint ? { checkpoint: outcome.checkpoint } : {}), ...(outcome.notes.length > 0 ? { notes: outcome.notes } : {}) });
}
