import path from 'node:path';
import { createChatJournal, type ChatJournal } from '../kernel/chat-journal.js';
import { KERNEL_POLICY_FILE, openKernel, type Kernel } from '../kernel/open-kernel.js';

/**
 * The gateway's kernel: opened in the background when the gateway starts (PGlite takes seconds
 * to create its database the first time), serving /v0 and recording every chat as an
 * execution through the journal, which holds the chats' story until the database is there.
 */
export interface GatewayKernel {
  kernel(): Promise<Kernel>;
  journal: ChatJournal;
  /** Writes the chats' last events, then closes the database. */
  close(): Promise<void>;
}

export function openGatewayKernel(options: { root: string; env: Record<string, string | undefined>; log?: (line: string) => void }): GatewayKernel {
  let opening: Promise<Kernel> | undefined;
  const kernel = (): Promise<Kernel> => {
    opening ??= openKernel({
      root: options.root,
      policyFile: path.join(options.root, KERNEL_POLICY_FILE),
      chats: journal,
      ...(options.env['DATABASE_URL'] ? { databaseUrl: options.env['DATABASE_URL'] } : {}),
    }).catch((error: unknown) => {
      opening = undefined; // the next use tries again
      throw error;
    });
    return opening;
  };
  let warned = false;
  const journal = createChatJournal({
    write: async (writes) => (await kernel()).writeChats(writes),
    onError(error) {
      // Once per failing spell: a database that stays down would otherwise fill the log.
      if (warned) return;
      warned = true;
      options.log?.(`kernel: could not record chats as executions (retrying): ${error instanceof Error ? error.message : String(error)}`);
    },
  });
  void kernel().catch((error: unknown) => options.log?.(`kernel: could not open its database: ${error instanceof Error ? error.message : String(error)}`));
  return {
    kernel,
    journal,
    async close() {
      await journal.close();
      const open = await opening?.catch(() => undefined);
      await open?.close();
    },
  };
}
