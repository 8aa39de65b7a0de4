import { KiwiError } from '../base/errors.js';
import type { Tool } from '../registry/types.js';
import { toolContentHash, toolDocument, toolEmbeddingText } from '../registry/tool-document.js';

/** A tool (or another indexed document) as the index stores it. */
export interface SyncItem {
  id: string;
  /** The full-text document. */
  doc: string;
  /** What the embedder sees (a shorter text; see toolEmbeddingText). */
  embedText: string;
  hash: string;
}

export interface SyncPlan {
  /** New and changed tools, in the order given. */
  toEmbed: SyncItem[];
  added: number;
  updated: number;
  removed: string[];
  unchanged: number;
}

/** The documents and hashes of the tools to index; a repeated id is the caller's bug, not a shadowing rule to guess. */
export function wantedItems(tools: Tool[], embedderId: string): Map<string, SyncItem> {
  const wanted = new Map<string, SyncItem>();
  for (const tool of tools) {
    if (wanted.has(tool.id)) {
      throw new KiwiError('INVALID_INPUT', `tool id "${tool.id}" was given to the tool index twice; pass each tool once (resolve shadowed ids first)`, {
        details: { id: tool.id },
      });
    }
    wanted.set(tool.id, { id: tool.id, doc: toolDocument(tool), embedText: toolEmbeddingText(tool), hash: toolContentHash(tool, embedderId) });
  }
  return wanted;
}

/** Documents made elsewhere, by id; a repeated id is the caller's bug, as for tools. */
export function documentItems(documents: SyncItem[]): Map<string, SyncItem> {
  const wanted = new Map<string, SyncItem>();
  for (const item of documents) {
    if (wanted.has(item.id)) throw new KiwiError('INVALID_INPUT', `document id "${item.id}" was given to the index twice; pass each once`, { details: { id: item.id } });
    wanted.set(item.id, item);
  }
  return wanted;
}

/** Compares wanted tools with the id → hash pairs the table holds. */
export function planSync(wanted: Map<string, SyncItem>, existing: Map<string, string>): SyncPlan {
  const toEmbed: SyncItem[] = [];
  let added = 0;
  let updated = 0;
  for (const item of wanted.values()) {
    const stored = existing.get(item.id);
    if (stored === item.hash) continue;
    toEmbed.push(item);
    if (stored === undefined) added++;
    else updated++;
  }
  const removed = [...existing.keys()].filter((id) => !wanted.has(id));
  return { toEmbed, added, updated, removed, unchanged: wanted.size - toEmbed.length };
}
