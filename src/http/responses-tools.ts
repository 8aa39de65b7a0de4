import { z } from 'zod';
import { badField, fieldPath } from './body-error.js';

/**
 * A Responses client's own `tools` and `tool_choice`, translated to the Chat Completions shape
 * the chat edge receives (`{type: "function", function: {name, description, parameters}}`), so
 * that both edges hand the gateway the same fields and native tool pass-through has one shape
 * to read. Only function tools travel: OpenAI's hosted tools (web search, file search, code
 * interpreter…) run inside OpenAI's Responses service, which no upstream behind the gateway is.
 */

const functionTool = z.looseObject({
  type: z.literal('function'),
  name: z.string().regex(/^[\w-]{1,64}$/, 'must be 1 to 64 letters, digits, underscores or dashes'),
  description: z.string().max(16_384).nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const CHOICE_WORDS = new Set(['none', 'auto', 'required']);

export interface ChatToolFields {
  tools?: Record<string, unknown>[];
  tool_choice?: string | Record<string, unknown>;
  parallel_tool_calls?: boolean;
}

function toolAt(value: unknown, i: number): Record<string, unknown> {
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
  const fn = {
    name: t.name,
    ...(typeof t.description === 'string' ? { description: t.description } : {}),
    ...(t.parameters ? { parameters: t.parameters } : {}),
    ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}),
  };
  return { type: 'function', function: fn };
}

function choiceOf(value: unknown, names: ReadonlySet<string>): ChatToolFields['tool_choice'] {
  if (typeof value === 'string' && CHOICE_WORDS.has(value)) return value;
  const v = typeof value === 'object' && value !== null ? (value as { type?: unknown; name?: unknown }) : undefined;
  if (v?.type === 'function' && typeof v.name === 'string') {
    if (!names.has(v.name)) throw badField('tool_choice.name', `is "${v.name.slice(0, 64)}", which is not one of the function tools given in tools`);
    return { type: 'function', function: { name: v.name } };
  }
  throw badField('tool_choice', 'must be "none", "auto", "required" or {"type": "function", "name": "…"}; the gateway passes no other choice');
}

/** The Chat Completions fields for a Responses body's tools; empty when it gives none. Throws INVALID_INPUT naming the field at fault. */
export function chatToolFields(body: Readonly<Record<string, unknown>>): ChatToolFields {
  const out: ChatToolFields = {};
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) throw badField('tools', 'must be an array of function tools');
    if (body.tools.length > 128) throw badField('tools', `has ${body.tools.length} tools; give at most 128`);
    if (body.tools.length > 0) out.tools = body.tools.map(toolAt);
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null) {
    const names = new Set((out.tools ?? []).map((t) => (t.function as { name: string }).name));
    out.tool_choice = choiceOf(body.tool_choice, names);
  }
  if (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null) {
    if (typeof body.parallel_tool_calls !== 'boolean') throw badField('parallel_tool_calls', 'must be true or false');
    if (out.tools !== undefined) out.parallel_tool_calls = body.parallel_tool_calls;
  }
  return out;
}
