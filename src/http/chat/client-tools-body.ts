import { z } from 'zod';
import { GATEWAY_CALL_PREFIX } from '../../loop/loop-types.js';
import { clientToolsProblem, type ToolPaths } from '../../llm/client-tools.js';
import type { ClientTool, ClientToolChoice, ClientTools } from '../../llm/types.js';
import { badField } from './body-error.js';

/**
 * A client's own tools, read from its protocol's body fields into `ChatRequest.clientTools`.
 * The shapes are checked by the body schemas below (so errors name the field as the client
 * wrote it); the limits every protocol shares by `clientToolsProblem`.
 */

const EMPTY_SCHEMA = { type: 'object', properties: {} };
const text = z.string().max(64 * 1024).nullish();

export const openAiToolFields = {
  tools: z
    .array(
      z.looseObject({
        type: z.literal('function', { error: 'must be "function": the gateway forwards function tools only' }),
        function: z.looseObject({ name: z.string(), description: text, parameters: z.unknown().optional(), strict: z.boolean().nullish() }),
      }),
      { error: 'must be an array of tools, each {"type": "function", "function": {"name": …, "parameters": {…}}}' },
    )
    .nullish(),
  tool_choice: z
    .union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) })], {
      error: 'must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}',
    })
    .nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  functions: z.unknown().optional(),
  function_call: z.unknown().optional(),
};

export const anthropicToolFields = {
  tools: z
    .array(z.looseObject({ type: z.string().nullish(), name: z.string(), description: text, input_schema: z.unknown().optional() }), {
      error: 'must be an array of tools, each {"name": …, "description": …, "input_schema": {…}}',
    })
    .nullish(),
  tool_choice: z
    .looseObject({ type: z.enum(['auto', 'any', 'tool', 'none'], { error: 'must be "auto", "any", "tool" or "none"' }), name: z.string().nullish(), disable_parallel_tool_use: z.boolean().nullish() })
    .nullish(),
};

type OpenAiFields = { [K in keyof typeof openAiToolFields]?: z.output<(typeof openAiToolFields)[K]> };
type AnthropicFields = { [K in keyof typeof anthropicToolFields]?: z.output<(typeof anthropicToolFields)[K]> };

/** Checks the limits; absent when the client sent no tools (or an empty list and no choice). */
export function checkedClientTools(ct: ClientTools, paths: ToolPaths): ClientTools | undefined {
  const problem = clientToolsProblem(ct, paths);
  if (problem !== undefined) throw badField(problem.path, problem.problem);
  return ct.tools.length === 0 ? undefined : ct;
}

/** One tool in the shared shape; an absent schema is an empty object schema. */
export function clientTool(name: string, description: string | null | undefined, parameters: unknown, strict?: boolean | null): ClientTool {
  return {
    name,
    ...(typeof description === 'string' ? { description } : {}),
    // A bad schema is caught by the limits check, which names its field.
    parameters: (parameters ?? EMPTY_SCHEMA) as Record<string, unknown>,
    ...(typeof strict === 'boolean' ? { strict } : {}),
  };
}

export function readOpenAiTools(b: OpenAiFields): ClientTools | undefined {
  // The deprecated fields would have to be translated for every upstream; a clear refusal instead of a silent drop.
  if (b.functions !== undefined && b.functions !== null) throw badField('functions', 'is deprecated and not forwarded: send "tools": [{"type": "function", "function": {…}}] instead');
  if (b.function_call !== undefined && b.function_call !== null) throw badField('function_call', 'is deprecated and not forwarded: send "tool_choice" instead');
  const choice = b.tool_choice;
  if ((b.tools === undefined || b.tools === null) && (choice === undefined || choice === null)) return undefined;
  const ct: ClientTools = {
    tools: (b.tools ?? []).map((t) => clientTool(t.function.name, t.function.description, t.function.parameters, t.function.strict)),
    ...(choice === undefined || choice === null ? {} : { choice: typeof choice === 'string' ? { type: choice } : { type: 'tool', name: choice.function.name } }),
    ...(typeof b.parallel_tool_calls === 'boolean' ? { parallel: b.parallel_tool_calls } : {}),
  };
  return checkedClientTools(ct, {
    tools: 'tools',
    name: (i) => `tools[${i}].function.name`,
    parameters: (i) => `tools[${i}].function.parameters`,
    choice: 'tool_choice',
  });
}

const ANTHROPIC_CHOICE: Record<'auto' | 'any' | 'none', ClientToolChoice> = { auto: { type: 'auto' }, any: { type: 'required' }, none: { type: 'none' } };

export function readAnthropicTools(b: AnthropicFields): ClientTools | undefined {
  const choice = b.tool_choice;
  if ((b.tools === undefined || b.tools === null) && (choice === undefined || choice === null)) return undefined;
  const tools = (b.tools ?? []).map((t, i) => {
    // Server tools (web search, code execution…) run at Anthropic and answer in blocks the gateway does not read.
    if (typeof t.type === 'string' && t.type !== 'custom') throw badField(`tools[${i}].type`, `is "${t.type.slice(0, 80)}"; the gateway forwards custom tools only (name, description, input_schema)`);
    if (t.input_schema === undefined) throw badField(`tools[${i}].input_schema`, 'is required: the JSON Schema of the tool\'s input, e.g. {"type": "object", "properties": {…}}');
    return clientTool(t.name, t.description, t.input_schema);
  });
  let picked: ClientToolChoice | undefined;
  if (choice?.type === 'tool') {
    if (typeof choice.name !== 'string') throw badField('tool_choice.name', 'is required when tool_choice.type is "tool"');
    picked = { type: 'tool', name: choice.name };
  } else if (choice !== undefined && choice !== null) {
    picked = ANTHROPIC_CHOICE[choice.type];
  }
  const ct: ClientTools = { tools, ...(picked ? { choice: picked } : {}), ...(choice?.disable_parallel_tool_use === true ? { parallel: false } : {}) };
  return checkedClientTools(ct, { tools: 'tools', name: (i) => `tools[${i}].name`, parameters: (i) => `tools[${i}].input_schema`, choice: 'tool_choice.name' });
}

/**
 * Whether a call in the client's history goes back up as a native call: only when the request
 * has tools (Anthropic refuses tool_use blocks without them), and never one of the gateway's
 * own (resolve-only) calls, which the upstream did not make: those go up as text.
 */
export function isNativeCallId(id: string | null | undefined, clientTools: ClientTools | undefined): id is string {
  return clientTools !== undefined && typeof id === 'string' && id !== '' && !id.startsWith(GATEWAY_CALL_PREFIX);
}
