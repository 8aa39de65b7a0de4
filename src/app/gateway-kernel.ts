import { existsSync } from 'node:fs';
import path from 'node:path';
import { createChatJournal, type ChatJournal } from '../kernel/chat-journal.js';
import type { KernelLimits } from '../kernel/kernel-limits.js';
import type { KernelEventsBus } from '../contracts/kernel-events-bus.js';
import type { Tracing } from '../contracts/tracing.js';
import { KERNEL_POLICY_FILE, KERNEL_STATE_DIR, openKernel, type Kernel } from '../kernel/open-kernel.js';

/**
 * The gateway's kernel: opened when the gateway starts (PGlite takes seconds to create its
 * database the first time, with the event loop mostly blocked: better before the gateway
 * serves than in the middle of its first chats), serving /v0 and recording every chat as an
 * execution through the journal. If it cannot open (another gateway holds the embedded
 * database, the server is down) the gateway still serves chats, says why, and tries again on
 * the next /v0 request and the journal's next write.
 *
 * `onDemand`: opened at its first use, never at start. For a command that runs a thread or a
 * pipeline in its own process (`kiwi directives run`): nothing there serves /v0 or records a
 * chat, so it has no use for the kernel, and opening it would take the embedded database, which
 * admits one process, from a gateway that serves the project (or keep one from starting).
 */
export interface GatewayKernel {
  kernel(): Promise<Kernel>;
  journal: ChatJournal;
  /** Writes the chats' last events, then closes the database. */
  close(): Promise<void>;
}

/** How long a running chat may stay unwritten in the embedded database: a crash loses the running chats begun since. */
const CHAT_HOLD_MS = 1000;

export async function openGatewayKernel(options: {
  root: string;
  env: Record<string, string | undefined>;
  limits?: KernelLimits;
  events?: KernelEventsBus;
  tracing?: Tracing;
  log?: (line: string) => void;
  onDemand?: boolean;
}): Promise<GatewayKernel> {
  // A server shared with other gateways, or the embedded database.
  const databaseUrl = options.env['DATABASE_URL'] === '' ? undefined : options.env['DATABASE_URL'];
  const shared = databaseUrl !== undefined;
  let opening: Promise<Kernel> | undefined;
  const kernel = (): Promise<Kernel> => {
    opening ??= openKernel({
      root: options.root,
      policyFile: path.join(options.root, KERNEL_POLICY_FILE),
      chats: journal,
      // Its writes run in WebAssembly on the calling thread: on the request thread they stalled every chat.
      pgliteThread: true,
      ...(options.events ? { events: options.events } : {}),
      ...(options.tracing ? { tracing: options.tracing } : {}),
      ...(databaseUrl === undefined ? {} : { databaseUrl }),
      ...(options.limits === undefined ? {} : { limits: options.limits }),
    }).catch((error: unknown) => {
      opening = undefined; // the next use tries again
      throw error;
    });
    return opening;
  };
  let warned = false;
  const journal = createChatJournal({
    write: async (writes) => (await kernel()).writeChats(writes),
    // Embedded, only this process reads the database, and its reads write what is held first: a
    // chat is written when it ends, as one row. A server is read by other gateways and commands.
    ...(shared ? {} : { holdMs: CHAT_HOLD_MS }),
    // On a shared server another gateway may cancel our chats: look when told (over Redis), and now and then.
    ...(shared ? { cancelledAmong: async (ids: string[]) => (await kernel()).cancelledAmong(ids), ...(options.events ? { events: options.events } : {}) } : {}),
    onError(error) {
      // Once per failing spell: a database that stays down would otherwise fill the log.
      if (warned) return;
      warned = true;
      options.log?.(`kernel: could not record chats as executions (retrying): ${error instanceof Error ? error.message : String(error)}`);
    },
  });
  const gatewayKernel: GatewayKernel = {
    kernel,
    journal,
    async close() {
      await journal.close();
      const open = await opening?.catch(() => undefined);
      await open?.close();
    },
  };
  if (options.onDemand === true) return gatewayKernel;
  if (!shared && !existsSync(path.join(options.root, KERNEL_STATE_DIR))) {
    options.log?.(`kernel: creating its embedded database under ${KERNEL_STATE_DIR} (a few seconds, the first time only)`);
  }
  await kernel().catch((error: unknown) => options.log?.(`kernel: could not open its database (chats are not recorded until it opens): ${error instanceof Error ? error.message : String(error)}`));
  return gatewayKernel;
}
