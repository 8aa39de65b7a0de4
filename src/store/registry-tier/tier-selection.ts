import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../../base/canonical-json.js';
import { isInside } from '../../policy/path-check.js';
import { readCappedFile } from '../../base/read-capped-file.js';
import type { FoundFile } from '../../registry/registry-files.js';
import { replaceFile } from '../../base/replace-file.js';
import { ITEM_TYPES, VERSION_LIMITS } from './tier-version.js';

/**
 * What a load of the pinned versions found, kept beside the versions it wrote
 * (`.ai/tools/.registry/selection.json`) with the key of the tier it was read from. Opening the
 * database costs seconds (PGlite starting) or a round trip, and every `kiwi run` loads the
 * registry; a version never changes once pushed, so a load whose tier and pins are those saved
 * reads the chosen manifests from disk and opens nothing. Only a load that found every pin is
 * saved: a pin the tier lacked today may be pushed tomorrow.
 */
const SELECTION_FILE = 'selection.json';

/** 3: keyed by the tier, no longer by a stamp of the embedded tier's pushes; an older selection is read again from the database. */
const FORMAT = 3;

const selectionFile = z.object({
  format: z.literal(FORMAT),
  tier: z.string(),
  pins: z.string(),
  found: z.array(z.object({ kind: z.enum(ITEM_TYPES), file: z.string(), display: z.string(), created: z.object({ owner: z.string().optional() }).optional() })).max(100_000),
});

/** The selection saved for this tier and these pins, its manifests read again; undefined when there is none, or it is another's or incomplete. */
export async function readSelection(cacheDir: string, tier: string, pins: Readonly<Record<string, string>>): Promise<FoundFile[] | undefined> {
  let saved: z.infer<typeof selectionFile>;
  try {
    const parsed = selectionFile.safeParse(JSON.parse(await readFile(path.join(cacheDir, SELECTION_FILE), 'utf8')));
    if (!parsed.success) return undefined;
    saved = parsed.data;
  } catch {
    return undefined;
  }
  if (saved.tier !== tier || saved.pins !== canonicalJson(pins)) return undefined;
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
  return found;
}

export async function writeSelection(cacheDir: string, tier: string, pins: Readonly<Record<string, string>>, found: readonly FoundFile[]): Promise<void> {
  const saved = found.map((f) => ({ kind: f.kind, file: f.label.file, display: f.label.display, ...(f.created ? { created: f.created } : {}) }));
  await replaceFile(path.join(cacheDir, SELECTION_FILE), JSON.stringify({ format: FORMAT, tier, pins: canonicalJson(pins), found: saved }));
}
