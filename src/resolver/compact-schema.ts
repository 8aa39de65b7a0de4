import type { Tool, ToolParameter } from '../registry/types.js';

/**
 * A tool as one short line an agent can call it from, in the exact-call form it is asked to
 * write: `read_file {"path": string, "max_bytes"?: integer = 65536} — Read a text file`.
 * Optional parameters carry `?`, enums list their values, and descriptions are cut, so a few of
 * these fit in a clarify reply or a menu without costing much of the agent's context.
 */

const MAX_DESCRIPTION = 100;
const MAX_PARAM_DESCRIPTION = 60;
const MAX_ENUM = 6;
const MAX_PATTERN = 40;

export function compactSchema(tool: Tool, options: { paramDescriptions?: boolean } = {}): string {
  const params = tool.parameters.map((p) => compactParam(p, options.paramDescriptions ?? true)).join(', ');
  return `${tool.id} {${params}} — ${oneLine(tool.description, MAX_DESCRIPTION) || '(no description)'}`;
}

/** `id — description`, for the menu of likely tools. */
export function menuLine(tool: Tool): string {
  return `${tool.id} — ${oneLine(tool.description, MAX_DESCRIPTION) || '(no description)'}`;
}

function compactParam(p: ToolParameter, withDescription: boolean): string {
  const type = p.enum ? enumText(p.enum) : p.type === 'array' && p.items ? `${p.items.type}[]` : `${p.type}${constraints(p)}`;
  const fallback = p.default === undefined ? '' : ` = ${JSON.stringify(p.default)?.slice(0, 40)}`;
  const about = withDescription && p.description ? ` (${oneLine(p.description, MAX_PARAM_DESCRIPTION)})` : '';
  return `${JSON.stringify(p.name)}${p.required ? '' : '?'}: ${type}${fallback}${about}`;
}

/** What a value must look like, so that an exact call is written right the first time: `string<date>`, `integer 1..12`, `string /^[A-Z]{3}$/`. */
function constraints(p: ToolParameter): string {
  let out = p.format === undefined ? '' : `<${p.format}>`;
  if (p.minimum !== undefined || p.maximum !== undefined) out += ` ${p.minimum ?? ''}..${p.maximum ?? ''}`;
  if (p.pattern !== undefined && p.pattern.length <= MAX_PATTERN) out += ` /${p.pattern}/`;
  return out;
}

function enumText(values: unknown[]): string {
  const shown = values.slice(0, MAX_ENUM).map((v) => JSON.stringify(v)).join(' | ');
  return values.length > MAX_ENUM ? `${shown} | …` : shown;
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
