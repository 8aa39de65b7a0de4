/**
 * Approval waits as `input_required` results (MCP 2026-07-28). A 2025 client keeps its tool call
 * open while a person decides, told so by progress or log notifications. A client of the new
 * protocol holds no session: once its call starts waiting for a person, the gateway answers
 * `input_required` with a `requestState` that names the call's execution, and the client's SDK
 * sends the same call again with it. Each such round waits up to `roundMs` for the call to end;
 * the result comes back on the first round after it ends, from this process (which ran it) or,
 * when the round reached another replica, from the kernel's record of the execution.
 *
 * The state carries no right, so it is not signed (an HMAC key would have to be handed to every
 * replica): it names an execution, and each round checks that the caller owns it. A forged,
 * replayed or another client's state is answered like an unknown one and opens nothing.
 */
import type { InputRequiredResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Caller } from '../policy/caller.js';
import { errorResult, EXECUTION_ID_META, type MetaResult } from './meta-common.js';

/** Where a call waits for a person: its execution and step, and what the client is told. */
export interface WaitingAt {
  executionId: string;
  stepId: string;
  message: string;
}

/** How an execution stands after waiting up to `waitMs` for it to end; undefined: unknown, or not the caller's. */
export type ExecutionOutcome = (
  executionId: string,
  caller: Caller,
  waitMs: number,
  signal: AbortSignal,
) => Promise<{ status: 'running' } | { status: 'ended'; result: MetaResult } | undefined>;

/** The work of one recorded call: it says when it starts waiting for a person, and stops at `signal`. */
export type WaitingWork = (waiting: (at: WaitingAt) => void, signal: AbortSignal) => Promise<MetaResult>;

export type MetaAnswer = MetaResult | InputRequiredResult;

export interface ApprovalWaits {
  /** A call's first round: its result, or `input_required` once it waits for a person (it then runs on apart from the request). */
  start(tool: string, caller: Caller, work: WaitingWork, requestSignal: AbortSignal): Promise<MetaAnswer>;
  /** A later round, with the state the last one gave: the call's result once it ended, else `input_required` again. */
  follow(tool: string, caller: Caller, state: string, requestSignal: AbortSignal): Promise<MetaAnswer>;
  /** Stops the calls still waiting here (the gateway is closing). */
  close(): void;
}

export interface ApprovalWaitsOptions {
  /** The kernel's record, for a round that reaches a replica other than the one running the call. */
  outcome?: ExecutionOutcome;
  /** How long one round waits for the call to end before answering `input_required` again (default 20 s, under an SDK client's 60 s request timeout). */
  roundMs?: number;
  /** Calls held here at once (default 256); past it, a call waits inside its request as a 2025 client's does. */
  maxHeld?: number;
  /** How long an ended call's result waits for its round (default 10 min). */
  keepMs?: number;
}

/** Where the waiting text and the execution go in an `input_required` result, for clients that show them. */
export const WAITING_META = 'kiwi.gateway/waiting';

const STATE_PREFIX = 'kiwi-wait.';
const stateSchema = z.object({ e: z.string().min(1).max(128), t: z.string().min(1).max(64), m: z.string().max(2000) }).strict();
type WaitState = z.output<typeof stateSchema>;

interface Held {
  client: string;
  result: Promise<MetaResult>;
  stop: AbortController;
  forget: NodeJS.Timeout | undefined;
}

export function createApprovalWaits(options: ApprovalWaitsOptions = {}): ApprovalWaits {
  const roundMs = options.roundMs ?? 20_000;
  const maxHeld = options.maxHeld ?? 256;
  const keepMs = options.keepMs ?? 10 * 60_000;
  const held = new Map<string, Held>();

  function drop(id: string): void {
    const entry = held.get(id);
    if (entry === undefined) return;
    clearTimeout(entry.forget);
    held.delete(id);
  }

  async function start(tool: string, caller: Caller, work: WaitingWork, requestSignal: AbortSignal): Promise<MetaAnswer> {
    // The call's own signal: the request's until the call is handed back, then only the gateway's close.
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(requestSignal.reason);
    requestSignal.addEventListener('abort', onAbort, { once: true });
    let waitingAt: (at: WaitingAt) => void = () => undefined;
    const waiting = new Promise<WaitingAt>((resolve) => (waitingAt = resolve));
    const result = work((at) => waitingAt(at), stop.signal);
    try {
      const first = await Promise.race([result.then((ended) => ({ ended })), waiting.then((at) => ({ at }))]);
      if ('ended' in first) return first.ended;
      const at = first.at;
      // No room to hold it: it waits inside this request, as a 2025 client's call does.
      if (held.size >= maxHeld) return await result;
      requestSignal.removeEventListener('abort', onAbort);
      const entry: Held = { client: caller.client, result, stop, forget: undefined };
      held.set(at.executionId, entry);
      // An ended call's result waits for its next round a while, then goes.
      void result.then(
        () => undefined,
        () => undefined,
      ).then(() => {
        if (held.get(at.executionId) === entry) entry.forget = setTimeout(() => drop(at.executionId), keepMs).unref();
      });
      return again({ e: at.executionId, t: tool, m: at.message });
    } finally {
      requestSignal.removeEventListener('abort', onAbort);
    }
  }

  async function follow(tool: string, caller: Caller, raw: string, requestSignal: AbortSignal): Promise<MetaAnswer> {
    const state = decodeState(raw);
    if (state === undefined || state.t !== tool) return unknownState(tool);
    const entry = held.get(state.e);
    if (entry !== undefined) {
      if (entry.client !== caller.client) return unknownState(tool);
      const ended = await within(entry.result, roundMs, requestSignal);
      if (ended === undefined) return again(state);
      drop(state.e);
      return ended;
    }
    const outcome = await options.outcome?.(state.e, caller, roundMs, requestSignal);
    if (outcome === undefined) return unknownState(tool);
    return outcome.status === 'running' ? again(state) : outcome.result;
  }

  return {
    start,
    follow,
    close() {
      for (const [id, entry] of held) {
        entry.stop.abort(new Error('the gateway is closing'));
        drop(id);
      }
    },
  };
}

/** The call still waits: the client is to send it again with this state. */
function again(state: WaitState): InputRequiredResult {
  return {
    resultType: 'input_required',
    requestState: `${STATE_PREFIX}${Buffer.from(JSON.stringify(state)).toString('base64url')}`,
    _meta: { [WAITING_META]: state.m, [EXECUTION_ID_META]: state.e },
  };
}

function decodeState(raw: string): WaitState | undefined {
  if (!raw.startsWith(STATE_PREFIX) || raw.length > 4096) return undefined;
  try {
    const parsed = stateSchema.safeParse(JSON.parse(Buffer.from(raw.slice(STATE_PREFIX.length), 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function unknownState(tool: string): MetaResult {
  return errorResult(
    'NOT_FOUND',
    `no ${tool} call of yours waits under this requestState: it ended and its result was collected, it was stopped when the gateway restarted, or the state was not one this gateway gave; call ${tool} again without it`,
  );
}

/** The promise's value if it settles within `ms`, else undefined; a rejection is passed on. */
async function within<T>(promise: Promise<T>, ms: number, signal: AbortSignal): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<undefined>((resolve, reject) => {
    timer = setTimeout(() => resolve(undefined), ms);
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
