/**
 * The exact call an ask-back offers for a tool, so that an agent that copies it writes a call that
 * can run: only parameters the tool has (a tool without any is `id {}`), the values the resolver
 * read from the text where the text holds them (value-evidence.ts), and a visible placeholder
 * (`"<path>"`) for every other required one. Never a value the text does not hold.
 */
import type { Tool } from '../registry/types.js';
import { valueEvidence, type EvidenceText } from './value-evidence.js';

export interface ReadValues {
  /** What the resolver read for this tool (a resolution's `found`). */
  values: Readonly<Record<string, unknown>>;
  /** The words they were read from. */
  text: EvidenceText;
}

export function exampleCall(tool: Tool, read?: ReadValues): string {
  const parts: string[] = [];
  for (const p of tool.parameters) {
    const value = read !== undefined && Object.hasOwn(read.values, p.name) ? read.values[p.name] : undefined;
    if (value !== undefined && read !== undefined && valueEvidence(value, p, read.text).score > 0) parts.push(`${JSON.stringify(p.name)}: ${JSON.stringify(value)}`);
    else if (p.required && p.default === undefined) parts.push(`${JSON.stringify(p.name)}: ${JSON.stringify(`<${p.name}>`)}`);
  }
  return `${tool.id} {${parts.join(', ')}}`;
}
