import { textHead } from '../base/text-cut.js';

/**
 * `help` as a signal: an agent says it is stuck, escalates to a person, or marks a checkpoint.
 * Not a tool call: nothing runs, but the signal is audited and fires the hooks' `help` event like
 * a call's events, so a policy can send a webhook when an agent escalates.
 */

export const HELP_ACTIONS = ['stuck', 'escalate', 'checkpoint'] as const;
export type HelpAction = (typeof HELP_ACTIONS)[number];

/** What a signal's message is cut to: a sentence or a paragraph, never a payload. */
export const MAX_HELP_MESSAGE_CHARS = 2000;

/** The tool id a signal is audited under, and the one hooks read as `tool.id`. */
export const HELP_TOOL = 'help';

export interface HelpSignal {
  action: HelpAction;
  message: string;
}

/** What became of a signal: its audit record's id, the hooks' notes and directives, and the checkpoint taken for it. */
export interface HelpOutcome {
  callId: string;
  notes: string[];
  directives: { name: string; inputs: Record<string, string> }[];
  /** A `checkpoint` signal's git checkpoint, when checkpoints are on. */
  checkpoint?: string;
  /** Why the signal was not taken (the rate limit): nothing but its denial was recorded. */
  refused?: string;
}

export function isHelpAction(value: string): value is HelpAction {
  return (HELP_ACTIONS as readonly string[]).includes(value);
}

/** The message trimmed and cut to MAX_HELP_MESSAGE_CHARS, saying so when it was cut. */
export function helpSignal(action: HelpAction, message: string): HelpSignal {
  const trimmed = message.trim();
  if (trimmed.length <= MAX_HELP_MESSAGE_CHARS) return { action, message: trimmed };
  return { action, message: `${textHead(trimmed, MAX_HELP_MESSAGE_CHARS)}… (cut)` };
}

/**
 * What the agent reads back: that it was heard, and what to do now. `thread`: an escalation ends
 * the thread (its message is the thread's result); over MCP the caller's own client decides.
 */
export function helpReplyText(action: HelpAction, outcome: HelpOutcome, where: 'thread' | 'mcp'): string {
  if (outcome.refused !== undefined) return `Your "${action}" signal was not recorded: ${outcome.refused}. Go on without it, or finish with what you have.`;
  const asked = outcome.directives.map((d) => `A hook of the policy asks you to run the directive ${d.name}${Object.keys(d.inputs).length === 0 ? '' : ` with inputs ${JSON.stringify(d.inputs)}`} next.`);
  const saved = outcome.checkpoint ? `, and the work tree is saved as git checkpoint ${outcome.checkpoint.slice(0, 12)} (\`kiwi checkpoints restore\` brings it back)` : '';
  const what =
    action === 'stuck'
      ? 'Your "stuck" signal is recorded. Try another way, or finish now with what you have and say what is missing.'
      : action === 'checkpoint'
        ? `Your checkpoint is recorded${saved}. Go on.`
        : where === 'thread'
          ? 'Your "escalate" signal is recorded; the thread ends here, and your message goes to whoever started it.'
          : 'Your "escalate" signal is recorded in the audit log for a person to decide. Stop here and wait for an answer; do not go on with the task.';
  return [what, ...asked].join(' ');
}
