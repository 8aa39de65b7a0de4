/**
 * Who created each item an agent created, and how many bytes its versions keep. An item an agent
 * created belongs to the client whose agent made it: only that client (or an admin) adds versions,
 * and a call that runs it can name whose code it runs. The project tier keeps one small JSON file
 * per item in a hidden folder beside the items, `.ai/<section>/created/.owners/<id>`, which the
 * registry's walk skips and an agent cannot write (a proposal's files are never hidden); the
 * registry tier keeps the same in its rows (the first version's `pushed_by`).
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { readCappedFile } from '../base/read-capped-file.js';
import type { SectionKind } from './registry-files.js';

export const OWNERS_DIR = '.owners';

/** An owner file is a line of JSON; anything larger was not written by the gateway. */
const MAX_OWNER_FILE_BYTES = 4096;
/** More owner files than any project has items is not read past: an item beyond it has no known owner, and only an admin versions it. */
const MAX_OWNER_FILES = 100_000;

const ownerRecord = z.strictObject({
  client: z.string().min(1).max(256),
  /** The bytes of every version of the item kept in the project, the one running included. */
  bytes: z.number().int().min(0),
});
export type OwnerRecord = z.infer<typeof ownerRecord>;

type OwnedKind = Exclude<SectionKind, 'pipeline'>;
export type Owners = ReadonlyMap<OwnedKind, ReadonlyMap<string, OwnerRecord>>;

const SECTION: Record<OwnedKind, string> = { tool: 'tools', directive: 'directives', knowledge: 'knowledge' };

/** A folder of `.ai/` (`/`-separated) where agents' creations land: `<section>/created/…`. */
export function isCreatedFolder(folder: string): boolean {
  const [section, created] = folder.split('/');
  return created === 'created' && Object.values(SECTION).includes(section ?? '');
}

/** A file of the project's `.ai` (at `aiDir`) inside one of the folders where creations land. */
export function isCreatedFile(aiDir: string, file: string): boolean {
  const relative = path.relative(aiDir, file);
  return !relative.startsWith('..') && !path.isAbsolute(relative) && isCreatedFolder(relative.split(path.sep).join('/'));
}

/** `.ai/<section>/created/.owners`, as segments below `.ai`. */
export function ownersFolder(kind: OwnedKind): string[] {
  return [SECTION[kind], 'created', OWNERS_DIR];
}

export function ownerText(record: OwnerRecord): string {
  return `${JSON.stringify(record)}\n`;
}

/** Every owner file of the project tier under `aiDir` (its real path). One that cannot be read, or is not the gateway's, is left out: its item has no known owner. */
export async function readOwners(aiDir: string): Promise<Owners> {
  const out = new Map<OwnedKind, Map<string, OwnerRecord>>();
  let read = 0;
  for (const kind of Object.keys(SECTION) as OwnedKind[]) {
    const dir = path.join(aiDir, ...ownersFolder(kind));
    const records = new Map<string, OwnerRecord>();
    out.set(kind, records);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue; // no creations of this kind yet
    }
    for (const id of names) {
      if (++read > MAX_OWNER_FILES) return out;
      const record = await readOwner(path.join(dir, id));
      if (record !== undefined) records.set(id, record);
    }
  }
  return out;
}

async function readOwner(file: string): Promise<OwnerRecord | undefined> {
  try {
    const bytes = await readCappedFile(file, MAX_OWNER_FILE_BYTES, () => new Error('too large'));
    const parsed = ownerRecord.safeParse(JSON.parse(bytes.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** What one client's created items keep, in bytes, over the project tier. */
export function bytesOwnedBy(owners: Owners, client: string): number {
  let total = 0;
  for (const records of owners.values()) for (const record of records.values()) if (record.client === client) total += record.bytes;
  return total;
}
