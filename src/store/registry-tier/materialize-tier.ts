import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FoundFile } from '../../registry/registry-files.js';
import type { RegistryIssue } from '../../registry/types.js';
import type { TierVersion } from './tier-version.js';
import { isCreatedFolder } from '../../registry/item-owners.js';

/**
 * Database-tier items as the registry loads them: each chosen version written once under
 * `.ai/tools/.registry/<id>@<version>-<digest>/`, and its manifest handed to the loader as a file
 * of the `registry` tier. There because the sandbox shows a tool `.ai/tools` and hides the rest of
 * `.ai/`, so a script runs from there as from the project's own tools; the leading dot keeps the
 * project tier's walk out of it. A version never changes, so a folder that is there is whole: it
 * is made beside and renamed into place.
 */
export const REGISTRY_CACHE_DIR = path.join('.ai', 'tools', '.registry');

export async function materializeTier(versions: readonly TierVersion[], cacheDir: string, issues: RegistryIssue[]): Promise<FoundFile[]> {
  const found: FoundFile[] = [];
  for (const v of versions) {
    const dir = path.join(cacheDir, `${v.id}@${v.version}-${v.digest.slice(0, 16)}`);
    const manifest = path.join(dir, ...v.folder.split('/'), ...v.manifest.split('/'));
    const label = { file: manifest, display: `registry:${v.id}@${v.version}/${v.folder}/${v.manifest}` };
    const text = utf8(v.files.find((f) => f.path === v.manifest)?.bytes);
    if (text === undefined) {
      issues.push({ kind: v.type, file: manifest, message: `${label.display}: is not valid UTF-8 text; push it again saved as UTF-8` });
      continue;
    }
    if (!existsSync(dir)) await writeVersion(v, dir);
    found.push({ kind: v.type, label, text, ...(isCreatedFolder(v.folder) ? { created: { owner: v.owner } } : {}) });
  }
  return found;
}

async function writeVersion(v: TierVersion, dir: string): Promise<void> {
  const temp = `${dir}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    for (const file of v.files) {
      // Paths were checked (relative, no `..`) when the version was read from the database.
      const target = path.join(temp, ...v.folder.split('/'), ...file.path.split('/'));
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, file.bytes, { flag: 'wx' });
    }
    await rename(temp, dir);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    // Another process put the same version there first: it is the same bytes.
    if (!existsSync(dir)) throw error;
  }
}

function utf8(bytes: Buffer | undefined): string | undefined {
  if (bytes === undefined) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
