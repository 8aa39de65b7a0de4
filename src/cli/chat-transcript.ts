import { z } from 'zod';
import type { CliIo } from './io.js';

/**
 * How `kiwi chat` shows a conversation: the agent's text as it streams, and each step the
 * gateway took (the `kiwi` events on its chunks) on a line of its own, so a person can follow
 * intent → resolution → call → result without reading JSON. Plain text, no colours: the same
 * output reads in a terminal, a pipe and a log file.
 */

/** The events shown, read loosely: another gateway version may add fields, or events this one skips. */
const sideSchema = z.looseObject({ model: z.string(), outcome: z.string(), inputTokens: z.number().optional(), outputTokens: z.number().optional() }).optional().catch(undefined);
const stepSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('intent'), text: z.string() }),
  z.looseObject({ type: z.literal('unresolved'), reason: z.string(), candidates: z.array(z.string()).catch([]), fallback: sideSchema }),
  z.looseObject({ type: z.literal('call'), call: z.looseObject({ tool: z.string(), arguments: z.unknown() }), fallback: sideSchema }),
  z.looseObject({ type: z.literal('result'), status: z.string(), isError: z.boolean().catch(false), text: z.string() }),
  z.looseObject({ type: z.literal('approval'), tool: z.string(), reason: z.string().catch(''), stepId: z.string(), timeoutMs: z.number().catch(0) }),
  z.looseObject({ type: z.literal('finish'), reason: z.string(), turns: z.number().catch(0), toolCalls: z.number().catch(0), limit: z.string().optional() }),
]);

/** A step line is cut here; the whole result is in the event (`--json`). */
const MAX_LINE_CHARS = 160;
/** Lines of a long result shown before "… (N more lines)". */
const MAX_RESULT_LINES = 3;
/** Text held back waiting for a line end when the io cannot write part of a line. */
const MAX_PENDING_CHARS = 64 * 1024;

export interface ChatTranscript {
  /** Agent text, as it streams. */
  text(text: string): void;
  /** One `kiwi` event; the ones that are not steps (start, turn, future kinds) show nothing. */
  event(event: unknown): void;
  /** Ends a line left open, so what follows (an error on stderr, the shell prompt) starts on its own. */
  end(): void;
}

/** `consoleUrl`: the console's approval queue, shown beside the command that answers a waiting call. */
export function createChatTranscript(io: CliIo, options: { consoleUrl?: string } = {}): ChatTranscript {
  const write = io.write?.bind(io) ?? lineBuffered(io);
  let atLineStart = true;
  // Spaces at the end of what came so far: written only if more text follows on the line, so a
  // step line that ends the agent's line leaves no trailing blanks behind.
  let heldSpace = '';

  function text(raw: string): void {
    let shown = heldSpace + terminalSafe(raw, true);
    heldSpace = '';
    // The gateway's own lines end the agent's; the text after them need not indent itself.
    if (atLineStart) shown = shown.replace(/^[ \t]+/, '');
    const trailing = /[ \t]+$/.exec(shown);
    if (trailing) {
      heldSpace = trailing[0].slice(0, MAX_PENDING_CHARS);
      shown = shown.slice(0, trailing.index);
    }
    if (shown === '') return;
    write(shown);
    atLineStart = shown.endsWith('\n');
  }

  function line(shown: string): void {
    end();
    write(`${shown}\n`);
  }

  function end(): void {
    heldSpace = '';
    if (!atLineStart) write('\n');
    atLineStart = true;
  }

  function event(raw: unknown): void {
    const parsed = stepSchema.safeParse(raw);
    if (!parsed.success) return;
    const e = parsed.data;
    switch (e.type) {
      case 'intent':
        return line(`→ intent: ${oneLine(e.text)}`);
      case 'unresolved': {
        if (e.fallback) sideRequest(e.fallback);
        // With candidates, the agent was sent them and asked to write the call exactly; without, nothing fits (or a limit stopped it).
        const closest = e.candidates.length > 0 ? ` (closest: ${e.candidates.map((c) => terminalSafe(c, false)).join(', ')})` : '';
        return line(`  ${e.candidates.length > 0 ? 'asked back' : 'not run'}: ${oneLine(e.reason)}${closest}`);
      }
      case 'call':
        if (e.fallback) sideRequest(e.fallback);
        return line(`→ call ${oneLine(`${e.call.tool} ${JSON.stringify(e.call.arguments ?? {})}`)}`);
      case 'approval': {
        // Without this line the chat looks hung while it waits for a person.
        const within = e.timeoutMs > 0 ? ` within ${Math.round(e.timeoutMs / 1000)} s` : '';
        line(`  waits for approval: ${oneLine(e.tool)}${e.reason === '' ? '' : ` (${oneLine(e.reason)})`}`);
        line(`  answer${within}: kiwi approvals grant ${oneLine(e.stepId)}   (or: kiwi approvals deny ${oneLine(e.stepId)} --reason TEXT)`);
        return options.consoleUrl === undefined ? undefined : line(`  or in the console: ${oneLine(options.consoleUrl)}`);
      }
      case 'result':
        return result(e.status === 'denied' ? 'denied' : e.status === 'error' || e.isError ? 'error' : 'result', e.text);
      case 'finish':
        return line(finishLine(e.reason, e.turns, e.toolCalls, e.limit));
    }
  }

  /** The model the gateway asked where its rules stopped (the resolver's fallback), and what came of it. */
  function sideRequest(side: NonNullable<z.infer<typeof sideSchema>>): void {
    const did = side.outcome === 'called' ? 'wrote the call' : side.outcome === 'declined' ? 'called nothing' : side.outcome === 'refused' ? 'wrote a call that failed the checks' : 'did not answer';
    const tokens = side.inputTokens === undefined ? '' : ` (${side.inputTokens} tokens in, ${side.outputTokens ?? 0} out)`;
    line(`  side request: ${oneLine(side.model)} ${did}${tokens}`);
  }

  /** A result on one line when it fits (pretty JSON folds well), else its first lines. */
  function result(label: string, output: string): void {
    const lines = output.trim().split(/\r\n|\r|\n/);
    const folded = lines.map((l) => l.trim()).join(' ');
    if (folded.length <= MAX_LINE_CHARS) return line(`  ${label}: ${terminalSafe(folded, false) || '(empty)'}`);
    line(`  ${label}:`);
    for (const l of lines.slice(0, MAX_RESULT_LINES)) line(`    ${oneLine(l)}`);
    if (lines.length > MAX_RESULT_LINES) line(`    … (${lines.length - MAX_RESULT_LINES} more lines)`);
  }

  return { text, event, end };
}

function finishLine(reason: string, turns: number, toolCalls: number, limit: string | undefined): string {
  const counts = `${turns} ${turns === 1 ? 'turn' : 'turns'}, ${toolCalls} ${toolCalls === 1 ? 'tool call' : 'tool calls'}`;
  if (limit !== undefined) return `(stopped by the gateway's ${oneLine(limit)} limit: ${counts})`;
  if (reason === 'length') return `(the model stopped at its output length limit: ${counts})`;
  if (reason === 'content_filter') return `(the model's content filter stopped it: ${counts})`;
  return `(done: ${counts})`;
}

/** One line, cut to MAX_LINE_CHARS; at the end of a clause when one ends in the second half, so the cut reads. */
function oneLine(text: string): string {
  const folded = terminalSafe(text.replace(/\s+/g, ' ').trim(), false);
  if (folded.length <= MAX_LINE_CHARS) return folded;
  const head = folded.slice(0, MAX_LINE_CHARS - 1);
  const clause = Math.max(head.lastIndexOf('; '), head.lastIndexOf('. '));
  return `${clause >= MAX_LINE_CHARS / 2 ? head.slice(0, clause) : head}…`;
}

/**
 * What the gateway relays (model text, tool output) goes to a terminal: control characters
 * (escape sequences could move the cursor or retitle the window) and bidi overrides are shown
 * escaped. Line ends and tabs stay in streamed text, where they are the agent's layout.
 */
export function terminalSafe(text: string, keepLayout: boolean): string {
  const laidOut = keepLayout ? text.replace(/\r\n?/g, '\n') : text;
  return laidOut.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (ch) =>
    keepLayout && (ch === '\n' || ch === '\t') ? ch : `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** For an io without `write` (tests, embedders): whole lines go out as they complete; a very long one in pieces. */
function lineBuffered(io: CliIo): (text: string) => void {
  let pending = '';
  return (text) => {
    pending += text;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const l of lines) io.out(l);
    while (pending.length >= MAX_PENDING_CHARS) {
      io.out(pending.slice(0, MAX_PENDING_CHARS));
      pending = pending.slice(MAX_PENDING_CHARS);
    }
  };
}
