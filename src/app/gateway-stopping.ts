import { followSignal, GATEWAY_STOPPING, gatewayStopping } from '../base/abort.js';
import type { KiwiError } from '../base/errors.js';
import type { RunningCall, RunningCalls } from '../proxy/running-calls.js';

/** How long cancelRunning waits for what it cut to end (a tool's tree gets SIGKILL 2 s after SIGTERM). */
const CANCEL_WAIT_MS = 5_000;

/**
 * The chats a gateway is running, and how it stops them. Shutdown aborts what is still running,
 * like a client going away (each chat's controller follows its client's signal: followSignal).
 * Each chat says what it is (for the log) and when it has ended (its execution written).
 */
export interface GatewayStopping {
  /**
   * A chat starts: its controller, aborted when its client goes away or the gateway stops (at
   * once when the gateway is stopping already). `end()` in the chat's `finally`.
   */
  start(what: string, clientSignal: AbortSignal | undefined): { controller: AbortController; end(): void };
  /**
   * When the shutdown's grace period (`graceMs`) is over: aborts the chats and tool calls still
   * running (MCP's and threads' too) with `gatewayStopping`, logging each call it cuts, and
   * resolves once each cut call's audit record says `cancelled` and each chat's stream has its
   * last event (at most CANCEL_WAIT_MS).
   */
  cancelRunning(graceMs: number): Promise<{ calls: RunningCall[]; chats: number }>;
  /** Aborts every chat still running: the gateway closes. */
  abortAll(): void;
}

export function createGatewayStopping(options: { running: RunningCalls; log?: (line: string) => void }): GatewayStopping {
  const { running } = options;
  const inFlight = new Map<AbortController, { what: string; ended: Promise<void> }>();
  let shuttingDown = false;
  /** Set once the grace period is over: what new and running chats are aborted with. */
  let stopping: KiwiError | undefined;
  return {
    start(what, clientSignal) {
      // A chat that starts once the gateway is stopping is aborted at once, for that reason.
      const { controller, unlink } = followSignal(shuttingDown ? undefined : clientSignal);
      if (shuttingDown) controller.abort(stopping ?? clientSignal?.reason);
      let ended = (): void => undefined;
      inFlight.set(controller, { what, ended: new Promise<void>((resolve) => (ended = resolve)) });
      return {
        controller,
        end() {
          inFlight.delete(controller);
          ended();
          unlink();
        },
      };
    },
    async cancelRunning(graceMs) {
      shuttingDown = true;
      stopping ??= gatewayStopping(graceMs);
      const reason = stopping;
      const chats = [...inFlight];
      // The chats first: their loops pass the reason on to their tool calls, and each stream's last event says it.
      for (const [controller] of chats) controller.abort(reason);
      const calls = running.list();
      for (const c of calls) options.log?.(`stopping: cancelling tool call ${c.tool} (call ${c.callId}, ${c.source}, client ${c.client}, session ${c.session}), running for ${Math.round((Date.now() - c.startedAt) / 1000)} s; its audit record says cancelled: ${GATEWAY_STOPPING}`);
      for (const [, chat] of chats) options.log?.(`stopping: cancelling ${chat.what}; its client is told the gateway is stopping`);
      // Bounded: a chat whose client stopped reading is suspended at a yield that nothing resumes (close() ends it).
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, CANCEL_WAIT_MS)));
      await Promise.race([Promise.all([running.cancelAll(reason), ...chats.map(([, chat]) => chat.ended)]), bound]).finally(() => clearTimeout(timer));
      return { calls, chats: chats.length };
    },
    abortAll() {
      shuttingDown = true;
      for (const controller of inFlight.keys()) controller.abort(stopping);
    },
  };
}
