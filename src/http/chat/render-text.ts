import { waitingText } from '../../runs/chat-approvals.js';
import type { LoopEvent, LoopMode } from '../../loop/loop-types.js';

/**
 * How loop events read in the content a client shows its user. In execute mode the user sees
 * each intent as the agent wrote it, the call it resolved to, and a short result, so the
 * conversation reads as it happened; the full events travel beside the text (the `kiwi`
 * fields), for clients that parse them. In resolve-only mode intents and calls are not text:
 * the edge turns each call into a native tool call instead.
 */

/** Results longer than this are cut in the content; the whole (already capped) text is in the `kiwi` result event. */
export const DEFAULT_MAX_SHOWN_CHARS = 2000;

export interface RenderOptions {
  maxShownChars?: number;
}

/** A fence longer than any run of backticks in the text, so a result cannot close it early. */
function fence(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return '`'.repeat(Math.max(3, longest + 1));
}

function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n… (${text.length - max} more characters)`;
}

function oneLine(text: string, max: number): string {
  return shorten(text.trim(), max).replace(/\s*\n\s*/g, ' ');
}

/** The content text for one event; empty when the event shows as no text in this mode. */
export function renderEventText(event: LoopEvent, mode: LoopMode, options: RenderOptions = {}): string {
  const max = options.maxShownChars ?? DEFAULT_MAX_SHOWN_CHARS;
  switch (event.type) {
    case 'text':
      return event.text;
    case 'intent':
      return mode === 'execute' ? event.raw : '';
    case 'call':
      return mode === 'execute' ? `\n→ ${event.call.tool} ${JSON.stringify(event.call.arguments)}\n` : '';
    case 'unresolved':
      return `\nunresolved: ${oneLine(event.reason, max)}\n`;
    case 'help':
      return `\nhelp ${event.action}: ${oneLine(event.message, max)}\n`;
    case 'approval':
      return `${waitingText(oneLine(event.reason, max), event.stepId, event.timeoutMs)}\n`;
    case 'result': {
      if (event.status === 'denied') return `denied: ${oneLine(event.text, max)}\n`;
      const shown = shorten(event.text, max);
      const f = fence(shown);
      const block = `${f}\n${shown}${shown.endsWith('\n') ? '' : '\n'}${f}\n`;
      // A failed call's output (a compiler error, a stack) keeps its lines, so it stays a block.
      return event.status === 'error' || event.isError ? `error:\n${block}` : block;
    }
    case 'start':
    case 'turn':
    case 'native_call':
    case 'finish':
      return '';
  }
}
