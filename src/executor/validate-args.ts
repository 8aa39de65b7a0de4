import { KiwiError } from '../base/errors.js';
import { formatProblem } from '../registry/string-formats.js';
import { compilePattern, MAX_MATCHED_CHARS } from '../registry/string-pattern.js';
import type { Tool, ToolParameter } from '../registry/types.js';
import { setOwn } from '../base/plain-object.js';
import { MAX_JSON_DEPTH, valueTooDeep } from '../base/json-depth.js';

/** The most a call's arguments may be, as JSON text: a file's content belongs in a file. */
export const MAX_ARGS_BYTES = 256 * 1024;

/**
 * Checks call arguments against the tool's parameters and fills defaults. Unknown arguments are
 * refused rather than dropped: a misspelt flag silently ignored is how wrong calls happen.
 */
export function validateArgs(tool: Tool, raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new KiwiError('INVALID_INPUT', `tool ${tool.id}: arguments must be a JSON object like {"name": value}, not ${Array.isArray(raw) ? 'an array' : typeof raw}`);
  }
  // Before JSON.stringify, which recurses: arguments a model or a client nested thousands of
  // levels deep would overflow the stack here and fail as an internal error.
  if (valueTooDeep(raw)) {
    throw new KiwiError('INVALID_INPUT', `tool ${tool.id}: arguments nest more than ${MAX_JSON_DEPTH} levels of arrays and objects; flatten them`);
  }
  if (JSON.stringify(raw).length > MAX_ARGS_BYTES) {
    throw new KiwiError('INVALID_INPUT', `tool ${tool.id}: arguments are larger than ${MAX_ARGS_BYTES} bytes; pass a file path instead of the content`);
  }
  const given = raw as Record<string, unknown>;
  const known = new Map(tool.parameters.map((p) => [p.name, p]));
  const unknown = Object.keys(given).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    const names = tool.parameters.map((p) => p.name).join(', ') || '(none)';
    throw new KiwiError('INVALID_INPUT', `tool ${tool.id}: unknown argument ${unknown.map((k) => `\`${k}\``).join(', ')}; its parameters are ${names}`);
  }
  const out: Record<string, unknown> = {};
  for (const param of tool.parameters) {
    const value = given[param.name];
    if (value === undefined || value === null) {
      if (param.default !== undefined) setOwn(out, param.name, param.default);
      else if (param.required) {
        throw new KiwiError('INVALID_INPUT', `tool ${tool.id}: missing required argument \`${param.name}\` (${param.type}${param.description ? `: ${param.description}` : ''})`);
      }
      continue;
    }
    setOwn(out, param.name, checkValue(tool, param, value));
  }
  return out;
}

function checkValue(tool: Tool, param: ToolParameter, value: unknown): unknown {
  const where = `tool ${tool.id}: argument \`${param.name}\``;
  if (typeof value === 'string' && value.includes('\u0000')) {
    throw new KiwiError('INVALID_INPUT', `${where} contains a NUL byte; remove it`);
  }
  const ok = (() => {
    switch (param.type) {
      case 'string':
        return typeof value === 'string';
      case 'number':
        return typeof value === 'number' && Number.isFinite(value);
      case 'integer':
        return typeof value === 'number' && Number.isInteger(value);
      case 'boolean':
        return typeof value === 'boolean';
      case 'array':
        return Array.isArray(value);
      case 'object':
        return typeof value === 'object' && !Array.isArray(value);
      case 'any':
        return true;
    }
  })();
  if (!ok) throw new KiwiError('INVALID_INPUT', `${where} must be ${article(param.type)}, got ${describe(value)}`);
  if (param.enum && !param.enum.some((e) => e === value)) {
    throw new KiwiError('INVALID_INPUT', `${where} must be one of ${param.enum.map((e) => JSON.stringify(e)).join(', ')}, got ${JSON.stringify(value)}`);
  }
  if (typeof value === 'number' && param.minimum !== undefined && value < param.minimum) throw new KiwiError('INVALID_INPUT', `${where} must be at least ${param.minimum}, got ${value}`);
  if (typeof value === 'number' && param.maximum !== undefined && value > param.maximum) throw new KiwiError('INVALID_INPUT', `${where} must be at most ${param.maximum}, got ${value}`);
  if (typeof value === 'string') checkString(where, param, value);
  return value;
}

function checkString(where: string, param: ToolParameter, value: string): void {
  const problem = param.format === undefined ? undefined : formatProblem(param.format, value);
  if (problem !== undefined) throw new KiwiError('INVALID_INPUT', `${where} ${problem}; got ${JSON.stringify(value.slice(0, 60))}`);
  if (param.pattern === undefined) return;
  // The registry keeps only patterns RE2 compiles; one that does not (a tool built elsewhere) is not enforced, as there.
  const compiled = compilePattern(param.pattern);
  if (!compiled.ok) return;
  if (value.length > MAX_MATCHED_CHARS) {
    throw new KiwiError('INVALID_INPUT', `${where} is ${value.length} characters long; a value with a pattern may have at most ${MAX_MATCHED_CHARS}`);
  }
  if (!compiled.test(value)) {
    throw new KiwiError('INVALID_INPUT', `${where} must match the pattern ${JSON.stringify(param.pattern)}${param.description ? ` (${param.description.slice(0, 100)})` : ''}; got ${JSON.stringify(value.slice(0, 60))}`);
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}
