import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../../canonical-json.js';
import { isInside } from '../../policy/path-check.js';
import { readCappedFile } from '../../read-capped-file.js';
import type { FoundFile } from '../../registry/registry-files.js';
import type { RegistryIssue } from '../../registry/types.js';
import { replaceFile } from '../../replace-file.js';
import { ITEM_TYPES, VERSION_LIMITS } from './tier-version.js';

/**
 * What a load of the embedded tier chose, kept beside the versions it wrote
 * (`.ai/tools/.registry/selection.json`) with the stamp of the tier it was read from. Opening the
 * embedded database costs seconds (PGlite starting), and every `kiwi run` loads the registry; so a
 * load whose stamp and pins are unchanged reads the chosen manifests from disk instead. Every push
 * that adds a version renews the stamp, and kiwi is the only writer of the embedded database. A
 * server (DATABASE_URL) is always asked: other machines push to it without touching this stamp.
 */
export interface TierSelection {
  found: FoundFile[];
  issues: RegistryIssue[];
}

const SELECTION_FILE = 'selection.json';

/** 2: each found file says whether an agent created it, and whose it is; a selection saved without that is read again from the database. */
const FORMAT = 2;

const selectionFile = z.object({
  format: z.literal(FORMAT),
  stamp: z.string(),
  pins: z.string(),
  found: z.array(z.object({ kind: z.enum(ITEM_TYPES), file: z.string(), display: z.string(), created: z.object({ owner: z.string().optional() }).optional() })).max(100_000),
  issues: z.array(z.object({ kind: z.enum(ITEM_TYPES), file: z.string(), message: z.string() })).max(100_000),
});

export async function readStamp(stampFile: string): Promise<string | undefined> {
  try {
    const stamp = (await readFile(stampFile, 'utf8')).trim();
    return stamp === '' ? undefined : stamp;
  } catch {
    return undefined;
  }
}

export async function renewStamp(stampFile: string): Promise<void> {
  await replaceFile(stampFile, `${randomBytes(16).toString('hex')}\n`);
}

/** The selection saved for this stamp and these pins, its manifests read again; undefined when there is none, or it is stale or incomplete. */
export async function readSelection(cacheDir: string, stamp: string, pins: Readonly<Record<string, string>>): Promise<TierSelection | undefined> {
  let saved: z.infer<typeof selectionFile>;
  try {
    const parsed = selectionFile.safeParse(JSON.parse(await readFile(path.join(cacheDir, SELECTION_FILE), 'utf8')));
    if (!parsed.success) return undefined;
    saved = parsed.data;
  } catch {
    return undefined;
  }
  if (saved.stamp !== stamp || saved.pins !== canonicalJson(pins)) return undefined;
  const found: FoundFile[] = [];
  for (const f of saved.found) {
    // Only the folders this process writes: a selection that points elsewhere is not used.
    if (!isInside(f.file, cacheDir)) return undefined;
    try {
      const text = (await readCappedFile(f.file, VERSION_LIMITS.maxFileBytes, () => new Error('too large'))).toString('utf8');
      found.push({ kind: f.kind, label: { file: f.file, display: f.display }, text, ...(f.created ? { created: f.created } : {}) });
    } catch {
      return undefined;
    }
  }
  return { found, issues: saved.issues };
}

export async function writeSelection(cacheDir: string, stamp: string, pins: Readonly<Record<string, string>>, selection: TierSelection): Promise<void> {
  const found = selection.found.map((f) => ({ kind: f.kind, file: f.label.file, display: f.label.display, ...(f.created ? { created: f.created } : {}) }));
  const issues = selection.issues.map(({ kind, file, message }) => ({ kind, file, message }));
  await replaceFile(path.join(cacheDir, SELECTION_FILE), JSON.stringify({ format: FORMAT, stamp, pins: canonicalJson(pins), found, issues }));
}
