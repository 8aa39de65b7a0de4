import { z } from 'zod';
import type { ToolResult } from '../contracts/tool-result.js';
import { describeError } from '../base/errors.js';
import type { HookSteer } from '../hooks/hook-runner.js';
import type { SteerDecision } from '../hooks/hook-types.js';
import { parseSteerAnswer } from '../hooks/steer-answer.js';
import type { ToolCall } from './tool-call.js';

/**
 * What a steering hook decided for a call. A hook's own decision stands as written; a steering
 * directive runs as a thread, as the call's caller, and the call waits for its answer
 * (steer-answer.ts) at most the hook's timeout. A thread that cannot run, does not answer in
 * time, ends other than completed, or answers no decision is a failure, which the caller turns
 * into a refusal before the call and a note after it (hooks fail closed).
 */

export interface Steering {
  /** The hook that decided, `file:line`. */
  hook: string;
  decision: SteerDecision;
  reason?: string;
  /** How many times a `retry` may run the call again. */
  max?: number;
  /** The steering directive's thread. */
  thread?: string;
}

/** Runs a directive's thread for a call, as its caller, and answers the thread's outcome (the gateway's ThreadPort.spawn). */
export type SteerThread = (directive: { name: string; inputs: Record<string, string> }, request: ToolCall) => Promise<ToolResult>;

export type Steered = { ok: true; steering: Steering } | { ok: false; reason: string };

/** A thread's outcome as ThreadPort.spawn gives it (threadOutcomeBody). */
const threadBody = z.object({ thread: z.string(), status: z.string(), result: z.string(), error: z.string().optional() });

export async function decideSteer(steer: HookSteer, request: ToolCall, thread: SteerThread | undefined): Promise<Steered> {
  if (steer.kind === 'decision') {
    const { hook, decision, reason, max } = steer;
    return { ok: true, steering: { hook, decision, ...(reason === undefined ? {} : { reason }), ...(max === undefined ? {} : { max }) } };
  }
  const named = `steering directive ${steer.name}`;
  if (thread === undefined) return { ok: false, reason: `${named} cannot run: no thread runs here (\`kiwi run\`, \`kiwi mcp\` on stdio); call through the gateway` };
  const timeout = AbortSignal.timeout(steer.timeoutMs);
  const asked = request.run?.signal;
  const signal = asked ? AbortSignal.any([asked, timeout]) : timeout;
  const late = `${named} did not answer within ${steer.timeoutMs / 1000} s`;
  let result: ToolResult;
  try {
    result = await thread({ name: steer.name, inputs: steer.inputs }, { ...request, run: { ...request.run, signal } });
  } catch (error) {
    return { ok: false, reason: timeout.aborted ? late : `${named} could not run: ${describeError(error)}` };
  }
  const body = threadBody.safeParse(result.data);
  if (!body.success) return { ok: false, reason: `${named} gave no thread outcome` };
  const { thread: id, status, error } = body.data;
  if (status !== 'completed') return { ok: false, reason: timeout.aborted ? `${late} (thread ${id} was cancelled)` : `${named}'s thread ${id} ended ${status}${error ? `: ${error}` : ''}` };
  const answer = parseSteerAnswer(body.data.result);
  if (!answer.ok) return { ok: false, reason: `${named}'s thread ${id} answered no decision: ${answer.reason}` };
  const retries = answer.decision === 'retry' ? { max: steer.retries } : {};
  return { ok: true, steering: { hook: steer.hook, decision: answer.decision, ...(answer.reason === undefined ? {} : { reason: answer.reason }), ...retries, thread: id } };
}
