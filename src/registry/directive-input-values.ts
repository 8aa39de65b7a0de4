import { KiwiError } from '../base/errors.js';
import type { Directive, DirectiveInput } from './types.js';

/**
 * A directive's inputs checked against its `<inputs>` (names, required ones, types; text from the
 * command line is read as the declared type).
 */

const MAX_INPUT_CHARS = 16 * 1024;

export function checkInputs(directive: Pick<Directive, 'name'> & { inputs?: readonly DirectiveInput[] | undefined }, given: Record<string, unknown>, kind: 'directive' | 'pipeline' = 'directive'): Record<string, unknown> {
  const declared = directive.inputs ?? [];
  const names = declared.map((i) => i.name);
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(given)) {
    const input = declared.find((i) => i.name === name);
    if (input === undefined) {
      throw new KiwiError('INVALID_INPUT', `${kind} ${directive.name} has no input ${JSON.stringify(name)}; ${names.length === 0 ? 'it takes none' : `its inputs are ${names.join(', ')}`}`);
    }
    out[name] = typed(`${kind} ${directive.name}`, name, input.type, value);
  }
  const missing = declared.filter((i) => i.required && !(i.name in out)).map((i) => i.name);
  if (missing.length > 0) throw new KiwiError('INVALID_INPUT', `${kind} ${directive.name} needs ${missing.map((m) => `--input ${m}=…`).join(' and ')}`);
  return out;
}

function typed(owner: string, name: string, type: string, value: unknown): unknown {
  const wrong = (what: string): KiwiError => new KiwiError('INVALID_INPUT', `input ${name} of ${owner} must be ${what}, not ${JSON.stringify(value)}`);
  const text = typeof value === 'string' ? value : undefined;
  if (text !== undefined && text.length > MAX_INPUT_CHARS) throw new KiwiError('INVALID_INPUT', `input ${name} of ${owner} is longer than ${MAX_INPUT_CHARS} characters`);
  switch (type) {
    case 'integer':
    case 'number': {
      const n = typeof value === 'number' ? value : text !== undefined && text.trim() !== '' ? Number(text) : Number.NaN;
      if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n))) throw wrong(`a${type === 'integer' ? 'n integer' : ' number'}`);
      return n;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (text === 'true' || text === 'false') return text === 'true';
      throw wrong('true or false');
    case 'object':
    case 'array': {
      let parsed: unknown = value;
      if (text !== undefined) {
        try {
          parsed = JSON.parse(text);
        } catch {
          throw wrong(`JSON (an ${type})`);
        }
      }
      if (type === 'array' ? !Array.isArray(parsed) : typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw wrong(`an ${type}`);
      return parsed;
    }
    default:
      if (text === undefined) throw wrong('text');
      return text;
  }
}
