import { z } from 'zod';
import type { ClientTool, ClientToolChoice, ClientTools } from '../../../llm/types.js';
import { badField, fieldPath } from '../body-error.js';
import { checkedClientTools, clientTool } from '../client-tools-body.js';

/**
 * A Responses client's own `tools`, `tool_choice` and `parallel_tool_calls`, read into
 * `ChatRequest.clientTools`, the one shape native tool pass-through sends upstream in each
 * upstream's protocol. Only function tools travel: OpenAI's hosted tools (web search, file
 * search, code interpreter…) run inside OpenAI's Responses service, which no upstream behind the
 * gateway is.
 */

const functionTool = z.looseObject({
  type: z.literal('function'),
  name: z.string(),
  description: z.string().max(16_384).nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const CHOICE_WORDS = new Set(['none', 'auto', 'required']);

function toolAt(value: unknown, i: number): ClientTool {
  const at = `tools[${i}]`;
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  if (type !== 'function') {
    const named = typeof type === 'string' ? `"${type.slice(0, 64)}"` : 'missing';
    throw badField(`${at}.type`, `is ${named}; the gateway passes function tools only ({"type": "function", "name": "…", "parameters": {…}}): hosted tools run inside OpenAI's service, not behind a gateway`);
  }
  const parsed = functionTool.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw badField(fieldPath([`tools`, i, ...(issue?.path ?? [])]), `is invalid: ${issue?.message ?? 'invalid'}`);
  }
  const t = parsed.data;
  return clientTool(t.name, t.description, t.parameters, t.strict);
}

function choiceOf(value: unknown, names: ReadonlySet<string>): ClientToolChoice {
  if (typeof value === 'string' && CHOICE_WORDS.has(value)) return { type: value as 'none' | 'auto' | 'required' };
  const v = typeof value === 'object' && value !== null ? (value as { type?: unknown; name?: unknown }) : undefined;
  if (v?.type === 'function' && typeof v.name === 'string') {
    if (!names.has(v.name)) throw badField('tool_choice.name', `is "${v.name.slice(0, 64)}", which is not one of the function tools given in tools`);
    return { type: 'tool', name: v.name };
  }
  throw badField('tool_choice', 'must be "none", "auto", "required" or {"type": "function", "name": "…"}; the gateway passes no other choice');
}

/** The client's tools of a Responses body; undefined when it gives none. Throws INVALID_INPUT naming the field at fault. */
export function responsesClientTools(body: Readonly<Record<string, unknown>>): ClientTools | undefined {
  let tools: ClientTool[] = [];
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) throw badField('tools', 'must be an array of function tools');
    tools = body.tools.map(toolAt);
  }
  const choice = body.tool_choice === undefined || body.tool_choice === null ? undefined : choiceOf(body.tool_choice, new Set(tools.map((t) => t.name)));
  const parallel = body.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean') throw badField('parallel_tool_calls', 'must be true or false');
  if (tools.length === 0 && choice === undefined) return undefined;
  const ct: ClientTools = { tools, ...(choice ? { choice } : {}), ...(typeof parallel === 'boolean' ? { parallel } : {}) };
  return checkedClientTools(ct, { tools: 'tools', name: (i) => `tools[${i}].name`, parameters: (i) => `tools[${i}].parameters`, choice: 'tool_choice' });
}
