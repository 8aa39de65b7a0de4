import { KiwiError } from '../errors.js';
import { helpIntentInstructions } from '../intent/help-intent.js';
import { DEFAULT_MARKER } from '../intent/intent-marker.js';
import type { ChatMessage } from '../llm/types.js';
import type { Directive } from '../registry/types.js';

/**
 * A directive's inputs checked against its `<inputs>` (names, required ones, types; text from the
 * command line is read as the declared type), and the thread's opening messages: the directive
 * itself as the system prompt, what to do as the first user message.
 */

const MAX_INPUT_CHARS = 16 * 1024;

export function checkInputs(directive: Directive, given: Record<string, unknown>): Record<string, unknown> {
  const declared = directive.inputs ?? [];
  const names = declared.map((i) => i.name);
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(given)) {
    const input = declared.find((i) => i.name === name);
    if (input === undefined) {
      throw new KiwiError('INVALID_INPUT', `directive ${directive.name} has no input ${JSON.stringify(name)}; ${names.length === 0 ? 'it takes none' : `its inputs are ${names.join(', ')}`}`);
    }
    out[name] = typed(directive.name, name, input.type, value);
  }
  const missing = declared.filter((i) => i.required && !(i.name in out)).map((i) => i.name);
  if (missing.length > 0) throw new KiwiError('INVALID_INPUT', `directive ${directive.name} needs ${missing.map((m) => `--input ${m}=…`).join(' and ')}`);
  return out;
}

function typed(directive: string, name: string, type: string, value: unknown): unknown {
  const wrong = (what: string): KiwiError => new KiwiError('INVALID_INPUT', `input ${name} of directive ${directive} must be ${what}, not ${JSON.stringify(value)}`);
  const text = typeof value === 'string' ? value : undefined;
  if (text !== undefined && text.length > MAX_INPUT_CHARS) throw new KiwiError('INVALID_INPUT', `input ${name} of directive ${directive} is longer than ${MAX_INPUT_CHARS} characters`);
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

/** The directive as the system prompt; the first user message names it, so the run is told apart in any transcript. */
export function threadMessages(directive: Directive, inputs: Record<string, unknown>, tools: readonly string[]): ChatMessage[] {
  const system = [
    `You are running the directive "${directive.name}" (version ${directive.version}): ${directive.description}`,
    'Follow its process step by step. Call tools only as the gateway instructions say; only these tools are allowed here, and any other call is denied:',
    tools.length === 0 ? '(none)' : tools.join(', '),
    'When the process is done, answer with its outcome as its <outputs> describe it.',
    helpIntentInstructions(DEFAULT_MARKER),
    '',
    directive.xml,
  ].join('\n');
  const given = Object.keys(inputs).length === 0 ? '' : ` with the inputs ${JSON.stringify(inputs)}`;
  return [
    { role: 'system', content: system },
    { role: 'user', content: `Run the directive ${directive.name}${given}.` },
  ];
}
