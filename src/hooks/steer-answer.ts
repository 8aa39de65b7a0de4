import { z } from 'zod';
import { STEER_DECISIONS, type SteerDecision } from './hook-types.js';

/**
 * How a steering directive answers: its thread's last turn holds a line `decision: WORD`
 * (`retry`, `skip`, `fail`, `abort` or `continue`) and may hold a line `reason: WORDS`; where
 * there are several, the last counts. Anything else is no answer, and the call's steering hook
 * fails closed. The words come from a model, so they are checked like any outside input.
 */

export type SteerAnswer = { ok: true; decision: SteerDecision; reason?: string } | { ok: false; reason: string };

const MAX_REASON_CHARS = 500;
const MAX_ANSWER_CHARS = 64 * 1024;

const answerSchema = z.strictObject({
  decision: z.enum(STEER_DECISIONS, { error: (issue) => (issue.input === undefined ? 'no line `decision: …`' : `decision ${JSON.stringify(issue.input)} is not one of ${STEER_DECISIONS.join(', ')}`) }),
  reason: z.string().min(1, 'the reason is empty').max(MAX_REASON_CHARS, `the reason is longer than ${MAX_REASON_CHARS} characters`).optional(),
});

export function parseSteerAnswer(text: string): SteerAnswer {
  if (text.length > MAX_ANSWER_CHARS) return { ok: false, reason: `the answer is longer than ${MAX_ANSWER_CHARS} characters` };
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^\s*(decision|reason)\s*:\s*(.*?)\s*$/i.exec(line);
    if (match) fields[(match[1] as string).toLowerCase()] = match[2] as string;
  }
  if (fields['decision'] !== undefined) fields['decision'] = fields['decision'].toLowerCase();
  const parsed = answerSchema.safeParse(fields);
  if (!parsed.success) return { ok: false, reason: parsed.error.issues.map((i) => i.message).join('; ') };
  return { ok: true, decision: parsed.data.decision, ...(parsed.data.reason === undefined ? {} : { reason: parsed.data.reason }) };
}
