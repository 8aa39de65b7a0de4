import { z } from 'zod';
import { HELP_ACTIONS } from '../proxy/help-signal.js';
import { usageSummarySchema } from '../budgets/usage-summary.js';
import type { ThreadHeader, ThreadLine } from './thread-store.js';

/**
 * A thread's line read back, checked: a transcript is written by a process that may have died
 * mid-line, and read by every replica and command, so a line that is torn, not JSON, or not one of
 * a thread's lines with the fields readers use, is left out rather than trusted (a header decides
 * whose thread it is). Unknown fields are kept: a newer gateway may add some.
 */

const text = z.string();
const header = z.looseObject({
  type: z.literal('thread'),
  id: z.string(),
  directive: z.string(),
  version: z.string().optional(),
  environment: z.string().optional(),
  retry_of: z.string().optional(),
  inputs: z.record(z.string(), z.unknown()),
  model: z.string(),
  client: z.string(),
  parent: z.string().optional(),
  pipeline: z.looseObject({ run: z.string(), name: z.string(), stage: z.string(), inputs: z.record(z.string(), z.unknown()) }).optional(),
  depth: z.number().int().min(0),
  started_at: z.string(),
});
const status = z.enum(['completed', 'failed', 'cancelled', 'escalated']);
const line = z.discriminatedUnion('type', [
  header,
  z.looseObject({ type: z.literal('turn'), turn: z.number().int(), text }),
  z.looseObject({ type: z.literal('call'), call_id: text, tool: text, arguments: z.unknown() }),
  z.looseObject({ type: z.literal('result'), call_id: text, tool: text, status: z.enum(['ok', 'denied', 'error']), is_error: z.boolean().optional(), code: text.optional(), text }),
  z.looseObject({ type: z.literal('unresolved'), intent: text, reason: text }),
  z.looseObject({ type: z.literal('approval'), tool: text, step_id: text, reason: text }),
  z.looseObject({ type: z.literal('resume'), client: text, model: text, message: text.optional(), at: text }),
  z.looseObject({ type: z.literal('help'), action: z.enum(HELP_ACTIONS), message: text, checkpoint: text.optional() }),
  z.looseObject({ type: z.literal('end'), status, result: text, steps_taken: z.number().int(), limit: text.optional(), error: text.optional(), code: text.optional(), failure: text.optional(), usage: usageSummarySchema.optional(), ended_at: text }),
]);

/** The line, or undefined when it is not a thread's line. */
export function parseThreadLine(json: string): ThreadLine | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined; // torn by a crash; a resumed thread writes on after it
  }
  const parsed = line.safeParse(value);
  return parsed.success ? (parsed.data as ThreadLine) : undefined;
}

/** The header of thread `id`: undefined unless `line` is one and names that thread (a transcript copied under another id is not that thread). */
export function headerOf(line: ThreadLine | undefined, id: string): ThreadHeader | undefined {
  return line?.type === 'thread' && line.id === id ? line : undefined;
}

/** A thread's lines as read back, in order: those that are not a thread's line left out, and a header only first and naming thread `id`. */
export function transcript(texts: Iterable<string>, id: string): ThreadLine[] {
  const lines: ThreadLine[] = [];
  for (const text of texts) {
    const line = text === '' ? undefined : parseThreadLine(text);
    if (line === undefined || (line.type === 'thread' && (lines.length > 0 || headerOf(line, id) === undefined))) continue;
    lines.push(line);
  }
  return lines;
}
