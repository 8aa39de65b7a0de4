import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../../base/canonical-json.js';
import { KiwiError } from '../../base/errors.js';
import { parseVersion } from '../../registry/directive-version.js';
import { TOOL_ID_PATTERN } from '../../registry/tool-name.js';

/**
 * One version of one item of the database tier, as it is pushed, stored and pulled: the item's
 * folder inside `.ai/` and its files relative to that folder, each kept byte for byte. Everything
 * here is checked where it enters (a push) and again where it leaves the database (a pull, a
 * load): the database is shared, so what it holds is only as good as its last writer.
 */

export const ITEM_TYPES = ['tool', 'directive', 'knowledge'] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

/** Caps of one version: its files, each file, and all of them together. */
export const VERSION_LIMITS = { maxFiles: 64, maxFileBytes: 1024 * 1024, maxTotalBytes: 8 * 1024 * 1024, maxPathLength: 255 } as const;

/** The sections of `.ai/` an item's folder may be in: the ones the registry loads. */
const SECTIONS = ['tools', 'scripts', 'directives', 'knowledge'];

export interface TierFile {
  /** Relative to the item's folder, `/`-separated. */
  path: string;
  bytes: Buffer;
  /** sha256 of the bytes, hex. */
  digest: string;
}

export interface NewVersion {
  id: string;
  type: ItemType;
  version: string;
  /** The item's folder inside `.ai/`, e.g. `tools/utility`. */
  folder: string;
  /** The file that defines the item (manifest, directive, entry), one of `files`. */
  manifest: string;
  /** The hash its `kiwi-mcp:validated` line records, when it is signed. */
  signature: string | null;
  files: TierFile[];
}

export interface TierVersion extends NewVersion {
  /** sha256 over the folder, the manifest's name and every file's path and digest. */
  digest: string;
  pushedBy: string;
  pushedAt: string;
  /** Who pushed the item's first version: for an item an agent created, the client it belongs to. */
  owner: string;
}

const segmentsOk = (value: string): boolean => value.split('/').every((s) => s !== '' && s !== '.' && s !== '..');

/** A relative path of `/`-separated names: no `..`, no `.`, no empty part, no absolute, no NUL, no backslash. */
export const relativePath = z
  .string()
  .min(1, 'the path is empty')
  .max(VERSION_LIMITS.maxPathLength, `the path is longer than ${VERSION_LIMITS.maxPathLength} characters`)
  .refine((p) => !p.includes('\0'), 'the path contains a NUL character')
  .refine((p) => !p.includes('\\'), 'the path contains a backslash; use / between folders')
  .refine((p) => !p.startsWith('/') && !path.win32.isAbsolute(p), 'the path is absolute; give it relative to the item folder')
  .refine(segmentsOk, 'the path has an empty, "." or ".." part; name the file inside the item folder');

export const itemId = z.string().regex(TOOL_ID_PATTERN, 'an id is 1-128 of A-Z, a-z, 0-9, "_", "." and "-"').refine((id) => id !== '.' && id !== '..', 'an id cannot be "." or ".."');

export const itemVersion = z
  .string()
  .max(64)
  .refine((v) => parseVersion(v) !== undefined && !v.startsWith('v'), 'a version is numbers separated by dots, like 1.2.0');

const folderPath = relativePath.refine((f) => SECTIONS.includes(f.split('/')[0] ?? ''), `the folder must be inside one of ${SECTIONS.join(', ')}`);

export function fileDigest(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function versionDigest(v: Pick<NewVersion, 'type' | 'folder' | 'manifest' | 'files'>): string {
  const files = [...v.files].map((f) => [f.path, f.digest]).sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1));
  return createHash('sha256').update(canonicalJson({ type: v.type, folder: v.folder, manifest: v.manifest, files })).digest('hex');
}

/** Checks a version against the rules above; throws INVALID_INPUT naming the item, the file and what to change. */
export function checkVersion(v: NewVersion): NewVersion {
  const where = `${v.type} ${JSON.stringify(v.id)}${v.version === '' ? '' : `@${v.version}`}`;
  const fail = (text: string): never => {
    throw new KiwiError('INVALID_INPUT', `${where}: ${text}`);
  };
  const problem = (result: z.ZodSafeParseResult<string>, what: string): void => {
    if (!result.success) fail(`${what}: ${result.error.issues[0]?.message ?? 'invalid'}`);
  };
  problem(itemId.safeParse(v.id), 'id');
  problem(itemVersion.safeParse(v.version), `version ${JSON.stringify(v.version)}`);
  problem(folderPath.safeParse(v.folder), `folder ${JSON.stringify(v.folder)}`);
  if (v.files.length === 0) fail('has no files');
  if (v.files.length > VERSION_LIMITS.maxFiles) fail(`has ${v.files.length} files, more than ${VERSION_LIMITS.maxFiles}; keep data out of the registry`);
  let total = 0;
  const seen = new Set<string>();
  for (const file of v.files) {
    problem(relativePath.safeParse(file.path), `file ${JSON.stringify(file.path)}`);
    if (seen.has(file.path)) fail(`file ${JSON.stringify(file.path)} is listed twice`);
    seen.add(file.path);
    if (file.bytes.length > VERSION_LIMITS.maxFileBytes) fail(`file ${file.path} is ${file.bytes.length} bytes, more than ${VERSION_LIMITS.maxFileBytes}`);
    if (fileDigest(file.bytes) !== file.digest) fail(`file ${file.path} does not match its digest; it was changed after it was read`);
    total += file.bytes.length;
  }
  if (total > VERSION_LIMITS.maxTotalBytes) fail(`its files are ${total} bytes together, more than ${VERSION_LIMITS.maxTotalBytes}`);
  if (!seen.has(v.manifest)) fail(`its manifest ${JSON.stringify(v.manifest)} is not one of its files`);
  return v;
}

export function tierFile(filePath: string, bytes: Buffer): TierFile {
  return { path: filePath, bytes, digest: fileDigest(bytes) };
}
