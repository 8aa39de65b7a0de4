import { z } from 'zod';
import { replaceFile } from '../base/replace-file.js';
import { readCappedFile } from '../base/read-capped-file.js';

/**
 * Bump when the table layout (columns, index options, distance metric) changes: an index
 * written by an older layout is then rebuilt instead of misread.
 */
export const INDEX_SCHEMA_VERSION = 1;

/** Beside the table, what it was built with; read on every open to decide whether to rebuild. */
export interface IndexMeta {
  schemaVersion: number;
  embedderId: string;
  dimensions: number;
  /** Rows added, updated or removed since the last `optimize()`. */
  changesSinceCompact: number;
}

const indexMetaSchema = z.object({
  schemaVersion: z.number().int(),
  embedderId: z.string().min(1),
  dimensions: z.number().int().positive(),
  changesSinceCompact: z.number().int().nonnegative(),
});

const MAX_META_BYTES = 64 * 1024;

class TooLarge extends Error {
  constructor(readonly size: number) {
    super(`${size} bytes`);
  }
}

export type MetaReadResult = { kind: 'missing' } | { kind: 'ok'; meta: IndexMeta } | { kind: 'unreadable'; error: string };

export async function readIndexMeta(file: string): Promise<MetaReadResult> {
  let text: string;
  try {
    text = (await readCappedFile(file, MAX_META_BYTES, (size) => new TooLarge(size))).toString('utf8');
  } catch (error) {
    if (error instanceof TooLarge) return { kind: 'unreadable', error: `${error.size} bytes, more than a metadata file can be` };
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'unreadable', error: (error as Error).message };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { kind: 'unreadable', error: `not JSON: ${(error as Error).message}` };
  }
  const parsed = indexMetaSchema.safeParse(json);
  if (!parsed.success) return { kind: 'unreadable', error: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ') };
  return { kind: 'ok', meta: parsed.data };
}

/** Temp file + rename, so a crash leaves the old metadata or the new one, never half of either. */
export async function writeIndexMeta(file: string, meta: IndexMeta): Promise<void> {
  await replaceFile(file, `${JSON.stringify(meta, null, 2)}\n`);
}

/** Why an index built with `meta` cannot serve `expected`, or null when it can. */
export function staleReason(meta: IndexMeta, expected: Pick<IndexMeta, 'schemaVersion' | 'embedderId' | 'dimensions'>): string | null {
  if (meta.embedderId !== expected.embedderId) return `was built with ${meta.embedderId} but the embedder is now ${expected.embedderId}`;
  if (meta.dimensions !== expected.dimensions) return `holds ${meta.dimensions}-dimensional vectors but ${expected.embedderId} gives ${expected.dimensions}`;
  if (meta.schemaVersion !== expected.schemaVersion) return `has table layout ${meta.schemaVersion} but this version of Kiwi writes layout ${expected.schemaVersion}`;
  return null;
}
