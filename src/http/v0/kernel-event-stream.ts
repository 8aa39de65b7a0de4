import type { Context } from 'hono';
import { lookEveryMs, watchExecution, type KernelEventsBus } from '../../contracts/kernel-events-bus.js';
import type { Kernel } from '../../kernel/open-kernel.js';
import { TERMINAL_STATUSES } from '../../kernel/types.js';
import { wireEvent } from './kernel-wire.js';
import { openSseChannel } from './sse-channel.js';

/**
 * `GET /v0/executions/{id}/stream` (§5): the stored events after `after_sequence`, then new ones
 * as they are written, each with `id:` = its sequence and `event:` = its type; the stream ends
 * after the execution's last event (completed, failed or cancelled), at once if that was
 * already sent. New events are read when the kernel's events bus says the execution has some
 * (contracts/kernel-events-bus.ts), and every `pollMs` all the same, which finds them whichever
 * gateway process on the database wrote them.
 */

const ENDING = new Set(['execution.completed', 'execution.failed', 'execution.cancelled']);
const PAGE = 1000;

/** The caller may read the execution (kernel-routes.ts asked); `sessions`: it may see session ids (kernel-wire.ts). */
export async function streamExecutionEvents(c: Context, kernel: Kernel, id: string, afterSequence: number, options: { sessions: boolean; pollMs?: number; until?: AbortSignal; events?: KernelEventsBus }): Promise<Response> {
  const pollMs = options.pollMs ?? lookEveryMs(options.events, 250);
  return openSseChannel(c, (channel) => {
    let after = afterSequence;
    let open = true;
    // Listening before the first read: events written while it reads still wake it.
    const watch = watchExecution(options.events, id);
    void channel.closed.then(() => {
      open = false;
      watch.close();
    });
    void (async () => {
      try {
        while (open) {
          const events = await kernel.executions.events(id, after, PAGE);
          for (const event of events) {
            if (!channel.send(event.type, wireEvent(event, options), event.sequence)) return;
            after = event.sequence;
            if (ENDING.has(event.type)) return channel.close();
          }
          if (events.length === PAGE) continue;
          // Nothing new, and nothing more will come: the end was sent before after_sequence.
          if (events.length === 0 && TERMINAL_STATUSES.has((await kernel.executions.get(id)).status)) return channel.close();
          const stop = new AbortController();
          await Promise.race([channel.closed, watch.wait(pollMs, stop.signal)]).finally(() => stop.abort());
        }
      } catch {
        channel.close();
      }
    })();
  }, options.until ? { until: options.until } : {});
}
