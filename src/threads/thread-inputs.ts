import { helpIntentInstructions } from '../intent/help-intent.js';
import { DEFAULT_MARKER } from '../intent/intent-marker.js';
import type { ChatMessage } from '../llm/types.js';
import type { Directive } from '../registry/types.js';

/** The directive as the system prompt; the first user message names it, so the run is told apart in any transcript. */
export function threadMessages(directive: Directive, inputs: Record<string, unknown>, tools: readonly string[], environment?: string): ChatMessage[] {
  const system = [
    `You are running the directive "${directive.name}" (version ${directive.version}): ${directive.description}`,
    'Follow its process step by step. Call tools only as the gateway instructions say; only these tools are allowed here, and any other call is denied:',
    tools.length === 0 ? '(none)' : tools.join(', '),
    'When the process is done, answer with its outcome as its <outputs> describe it.',
    helpIntentInstructions(DEFAULT_MARKER),
    ...(environment === undefined ? [] : ['', environment]),
    '',
    directive.xml,
  ].join('\n');
  const given = Object.keys(inputs).length === 0 ? '' : ` with the inputs ${JSON.stringify(inputs)}`;
  return [
    { role: 'system', content: system },
    { role: 'user', content: `Run the directive ${directive.name}${given}.` },
  ];
}
