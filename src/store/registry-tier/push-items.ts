import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { KiwiError } from '../../base/errors.js';
import { isInside } from '../../policy/path-check.js';
import { readCappedFile } from '../../base/read-capped-file.js';
import type { Directive, Knowledge, Registry, Tool } from '../../registry/types.js';
import { checkVersion, tierFile, VERSION_LIMITS, type NewVersion } from './tier-version.js';

/**
 * What `kiwi registry push` sends: each project-tier item (every version of a directive the tier
 * holds) with its files read byte for byte — a tool's manifest and the script its config names,
 * a directive's or knowledge entry's Markdown. `paths` narrows it to the items whose file is one
 * of them or inside one of them.
 */
export interface PushCandidate {
  label: string;
  version?: NewVersion;
  /** Why the item cannot be pushed, when it cannot. */
  problem?: string;
}

type Item = { type: 'tool'; item: Tool } | { type: 'directive'; item: Directive } | { type: 'knowledge'; item: Knowledge };

export async function pushCandidates(registry: Registry, aiDir: string, paths: readonly string[]): Promise<PushCandidate[]> {
  const realAi = await realpath(aiDir);
  const wanted = await Promise.all(paths.map(async (p) => realpath(p).catch(() => {
    throw new KiwiError('INVALID_INPUT', `${p} does not exist; name files or folders inside ${aiDir}`);
  })));
  const items: Item[] = [
    ...[...registry.tools.values()].map((item) => ({ type: 'tool' as const, item })),
    ...[...registry.directives.values()].flatMap((item) => [item, ...(registry.olderDirectives?.get(item.name) ?? [])]).map((item) => ({ type: 'directive' as const, item })),
    ...[...registry.knowledge.values()].map((item) => ({ type: 'knowledge' as const, item })),
  ].filter((i) => i.item.source.tier === 'project');
  const out: PushCandidate[] = [];
  for (const entry of items) {
    const manifestReal = await realpath(entry.item.source.path);
    if (wanted.length > 0 && !wanted.some((w) => isInside(manifestReal, w))) continue;
    out.push(await candidate(entry, realAi, manifestReal));
  }
  return out;
}

async function candidate(entry: Item, realAi: string, manifestReal: string): Promise<PushCandidate> {
  const id = entry.type === 'directive' ? entry.item.name : entry.item.id;
  const label = `${entry.type} ${id}@${entry.item.version}`;
  try {
    if (!isInside(manifestReal, realAi)) throw new KiwiError('INVALID_INPUT', `${manifestReal} is outside ${realAi}`);
    const folderReal = path.dirname(manifestReal);
    const names = [path.basename(manifestReal), ...scriptOf(entry, folderReal)];
    const files = [];
    for (const name of [...new Set(names)]) {
      const real = await realpath(path.join(folderReal, name)).catch(() => {
        throw new KiwiError('INVALID_INPUT', `its file ${name} does not exist next to the manifest`);
      });
      if (!isInside(real, folderReal)) throw new KiwiError('INVALID_INPUT', `its file ${name} leads outside the item's folder; keep scripts beside their manifest`);
      const bytes = await readCappedFile(real, VERSION_LIMITS.maxFileBytes, (size) => new KiwiError('INVALID_INPUT', `its file ${name} is ${size} bytes, more than ${VERSION_LIMITS.maxFileBytes}`));
      files.push(tierFile(toSlashes(path.relative(folderReal, real)), bytes));
    }
    const version: NewVersion = {
      id,
      type: entry.type,
      version: entry.item.version,
      folder: toSlashes(path.relative(realAi, folderReal)),
      manifest: path.basename(manifestReal),
      signature: entry.item.signature?.hash ?? null,
      files,
    };
    return { label, version: checkVersion(version) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { label, problem: message.startsWith(`${entry.type} `) ? message.slice(message.indexOf(': ') + 2) : message };
  }
}

/** A script tool's file (`config.script`, Kiwi's `entrypoint`), relative to its manifest; other items are one file. */
function scriptOf(entry: Item, folderReal: string): string[] {
  if (entry.type !== 'tool') return [];
  const script = entry.item.config['script'] ?? entry.item.config['entrypoint'];
  if (typeof script !== 'string' || script === '' || script.includes('{')) return [];
  return [path.relative(folderReal, path.resolve(folderReal, script))];
}

function toSlashes(p: string): string {
  return p.split(path.sep).join('/');
}
