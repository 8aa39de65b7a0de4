import { followSignal } from '../base/abort.js';
import type { CallStage } from './call-state.js';
import type { CallSource } from './tool-call.js';

/**
 * The calls running through the proxy, so that a stopping gateway can say which it cut and cut
 * them itself. Its stage is outermost, outside the audit: a call leaves the list only once its
 * record is written, so `cancelAll` resolves when every cut call is on file.
 */

export interface RunningCall {
  callId: string;
  tool: string;
  session: string;
  client: string;
  source: CallSource;
  /** When it started, as `now()` counts (ms). */
  startedAt: number;
}

export interface RunningCalls {
  /** Outermost in the proxy's chain: each call runs under a signal of its own that `cancelAll` can abort. */
  stage: CallStage;
  list(): RunningCall[];
  /**
   * Aborts every running call with `reason` (its tool's process tree is ended, its record says
   * `cancelled`), and resolves with them once each has ended and been audited.
   */
  cancelAll(reason: unknown): Promise<RunningCall[]>;
}

interface Entry {
  call: RunningCall;
  controller: AbortController;
  ended: Promise<void>;
}

export function createRunningCalls(options: { now?: () => number } = {}): RunningCalls {
  const now = options.now ?? Date.now;
  // Bounded by the calls in flight: each leaves in its own `finally`.
  const running = new Set<Entry>();

  const stage: CallStage = (next) => async (call) => {
    const { request } = call;
    const { target, caller } = request;
    const { controller, unlink } = followSignal(request.run?.signal);
    let end = (): void => undefined;
    const entry: Entry = {
      call: { callId: call.callId, tool: target.tool, session: caller.session, client: caller.client, source: caller.source, startedAt: now() },
      controller,
      ended: new Promise<void>((resolve) => (end = resolve)),
    };
    running.add(entry);
    try {
      // The stages after this one (the audit first) see the call's own signal.
      return await next({ ...call, request: { ...request, run: { ...request.run, signal: controller.signal } } });
    } finally {
      running.delete(entry);
      unlink();
      end();
    }
  };

  return {
    stage,
    list: () => [...running].map((e) => e.call),
    async cancelAll(reason) {
      const all = [...running];
      for (const e of all) e.controller.abort(reason);
      await Promise.all(all.map((e) => e.ended));
      return all.map((e) => e.call);
    },
  };
}
