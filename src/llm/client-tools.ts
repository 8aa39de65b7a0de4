import { isPlainObject } from '../base/plain-object.js';
import { parseJsonWithin } from '../base/json-depth.js';
import type { ClientTools } from './types.js';

/**
 * The limits on a client's own tools, shared by every edge that reads them and by the adapters'
 * request check, so a definition the gateway accepts is one both OpenAI and Anthropic accept.
 */

/** OpenAI's own limit on `tools`. */
export const MAX_CLIENT_TOOLS = 128;
/** The definitions together, as JSON: they are sent upstream on every turn of a request. */
export const MAX_CLIENT_TOOLS_BYTES = 256 * 1024;
/** A name both OpenAI (`^[a-zA-Z0-9_-]{1,64}$`) and Anthropic accept. */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Native calls one upstream turn may make; past it the answer is refused as malformed. */
export const MAX_NATIVE_CALLS = 128;

/** Where each problem is, in the words of the body the tools came from. */
export interface ToolPaths {
  tools: string;
  name(index: number): string;
  parameters(index: number): string;
  choice: string;
}

export interface ToolProblem {
  path: string;
  problem: string;
}

/** The first rule the tools break (count, size, names, schemas, a choice of an unknown tool), or undefined. */
export function clientToolsProblem(ct: ClientTools, paths: ToolPaths): ToolProblem | undefined {
  const { tools } = ct;
  if (tools.length > MAX_CLIENT_TOOLS) {
    return { path: paths.tools, problem: `has ${tools.length} tools; the gateway forwards at most ${MAX_CLIENT_TOOLS}: send only the ones this request needs` };
  }
  const seen = new Set<string>();
  for (const [i, tool] of tools.entries()) {
    if (!TOOL_NAME.test(tool.name)) {
      return { path: paths.name(i), problem: `${JSON.stringify(tool.name.slice(0, 80))} is not a tool name upstreams accept: use 1 to 64 letters, digits, "_" or "-"` };
    }
    if (seen.has(tool.name)) return { path: paths.name(i), problem: `"${tool.name}" names an earlier tool too; give each tool its own name` };
    seen.add(tool.name);
    if (!isPlainObject(tool.parameters)) return { path: paths.parameters(i), problem: 'must be a JSON Schema object, e.g. {"type": "object", "properties": {…}}' };
  }
  const bytes = Buffer.byteLength(JSON.stringify(tools));
  if (bytes > MAX_CLIENT_TOOLS_BYTES) {
    return { path: paths.tools, problem: `is ${bytes} bytes as JSON; the gateway forwards at most ${MAX_CLIENT_TOOLS_BYTES}: shorten descriptions and schemas, or send fewer tools` };
  }
  const choice = ct.choice;
  if (choice?.type === 'tool' && !seen.has(choice.name)) {
    return { path: paths.choice, problem: `names "${choice.name.slice(0, 80)}", which is not one of the request's tools` };
  }
  if (choice !== undefined && choice.type !== 'none' && choice.type !== 'auto' && tools.length === 0) {
    return { path: paths.choice, problem: 'asks for a tool call, but the request has no tools' };
  }
  return undefined;
}


/**
 * A call's JSON arguments as the object Anthropic's `input` must be. Models served over the
 * OpenAI protocol sometimes write arguments that are not JSON: those travel as
 * `{"_raw_arguments": "…"}` rather than being dropped, so whoever runs the call can see them.
 */
export function argumentsObject(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const value: unknown = parseJsonWithin(text);
    if (isPlainObject(value)) return value;
  } catch {
    // not JSON: kept as text below
  }
  return { _raw_arguments: text };
}

/**
 * Both protocols' tool fields. Each adapter sets its own from `clientTools` and owns all of
 * these, so a client's raw definitions never travel on in `extra`, in either protocol's shape.
 */
export const TOOL_FIELDS: readonly string[] = ['tools', 'tool_choice', 'parallel_tool_calls', 'functions', 'function_call'];
