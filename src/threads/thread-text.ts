import { textHead } from '../base/text-cut.js';
import type { ThreadLine } from './thread-store.js';

/**
 * One line of a thread as people and agents read it: `kiwi threads show|follow`, MCP progress
 * notifications, and the record a resumed thread's agent reads. A turn's text is cut at
 * `max.turn` characters; arguments, results and reasons, made one line, at `max.item`.
 */
export function threadLineText(line: ThreadLine, max: { turn: number; item: number }): string {
  const cut = (text: string, most = max.item): string => (text.length <= most ? text : `${textHead(text, most)}…`);
  const flat = (text: string): string => cut(text.replace(/\s+/g, ' ').trim());
  switch (line.type) {
    case 'thread':
      return `thread ${line.id}: directive ${line.directive} ${JSON.stringify(line.inputs)} on ${line.model}, started ${line.started_at} by ${line.client}`;
    case 'turn':
      return `[turn ${line.turn}] ${cut(line.text.trim(), max.turn)}`;
    case 'call':
      return `→ ${line.tool} ${cut(JSON.stringify(line.arguments))}`;
    case 'result':
      return `${line.status === 'ok' && line.is_error !== true ? '✓' : line.status === 'ok' ? '✗ failed:' : line.status === 'denied' ? '✗ denied:' : '✗ error:'} ${line.tool}: ${flat(line.text)}`;
    case 'unresolved':
      return `? not run: ${flat(line.intent)}: ${flat(line.reason)}`;
    case 'approval':
      return `… ${line.tool} waits for a person (${flat(line.reason)}): kiwi approvals grant ${line.step_id} (or deny)`;
    case 'help':
      return `! help ${line.action}: ${flat(line.message)}${line.checkpoint ? ` (checkpoint ${line.checkpoint.slice(0, 12)})` : ''}`;
    case 'resume':
      return `resumed ${line.at} by ${line.client} on ${line.model}${line.message === undefined ? '' : `: ${flat(line.message)}`}`;
    case 'end':
      return `ended ${line.ended_at}: ${line.status}${line.limit ? ` (the ${line.limit} limit)` : ''}, ${line.steps_taken} step(s)${line.failure ? `, failure: ${line.failure}` : ''}${line.error ? `: ${flat(line.error)}` : ''}`;
  }
}
