import { fileThreadStore } from '../threads/file-thread-store.js';
import type { ThreadStore } from '../threads/thread-store.js';

/** A project's threads: under its `.ai/threads/`. */
export function projectThreadStore(root: string): ThreadStore {
  return fileThreadStore(root);
}

/** For a command that reads threads without a gateway (`kiwi threads list`, anneal), closed by `close`. */
export async function openProjectThreadStore(root: string): Promise<{ store: ThreadStore; close(): Promise<void> }> {
  return { store: fileThreadStore(root), close: async () => undefined };
}
