import { lstat, mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { KiwiError } from '../../base/errors.js';
import { folderInside } from '../../policy/folder-inside.js';
import { readCappedFile } from '../../base/read-capped-file.js';
import { replaceFile } from '../../base/replace-file.js';
import { fileDigest, VERSION_LIMITS, type TierVersion } from './tier-version.js';

/**
 * Writes one version's files into the project's `.ai/<folder>/`. A file that is there with other
 * bytes (changed locally, or another version) is left alone unless `force`: then nothing is
 * written and the answer names them. Every target's folder is realpath-checked to be inside
 * `.ai/` before anything is made in it, and a target that is a symlink is refused, so a pull
 * never writes, nor makes a folder, outside it.
 */
export type PullOutcome =
  | { status: 'written'; written: string[]; unchanged: string[] }
  | { status: 'refused'; changed: string[] };

export async function pullVersion(v: TierVersion, aiDir: string, options: { force: boolean }): Promise<PullOutcome> {
  await mkdir(aiDir, { recursive: true });
  const realAi = await realpath(aiDir);
  const planned: Array<{ shown: string; target: string; bytes: Buffer; current: string | undefined; same: boolean }> = [];
  for (const file of v.files) {
    const relative = [...v.folder.split('/'), ...file.path.split('/')];
    const shown = `.ai/${relative.join('/')}`;
    const folder = await folderInside(realAi, relative.slice(0, -1));
    if (!folder.ok) throw new KiwiError('POLICY_DENIED', `${shown}: its folder leads outside .ai (to ${folder.outside}); remove the symlink, then pull again`);
    const target = path.join(folder.dir, relative.at(-1) as string);
    const current = await currentDigest(target, shown);
    planned.push({ shown, target, bytes: file.bytes, current, same: current === file.digest });
  }
  const changed = planned.filter((p) => !p.same);
  const differing = changed.filter((p) => p.current !== undefined).map((p) => p.shown);
  if (differing.length > 0 && !options.force) return { status: 'refused', changed: differing };
  for (const p of changed) await replaceFile(p.target, p.bytes);
  return { status: 'written', written: changed.map((p) => p.shown), unchanged: planned.filter((p) => p.same).map((p) => p.shown) };
}

/** The sha256 of the file there, or undefined when there is none; a symlink or a folder there is refused. */
async function currentDigest(target: string, shown: string): Promise<string | undefined> {
  let stat;
  try {
    stat = await lstat(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (!stat.isFile()) throw new KiwiError('POLICY_DENIED', `${shown}: is ${stat.isSymbolicLink() ? 'a symlink' : 'not a plain file'}; a pull writes only plain files — move it away, then pull again`);
  // A local file larger than any version's file is changed, whatever it holds.
  if (stat.size > VERSION_LIMITS.maxFileBytes) return 'too large';
  return fileDigest(await readCappedFile(target, VERSION_LIMITS.maxFileBytes, () => new KiwiError('INVALID_INPUT', `${shown}: grew while it was read`)));
}
