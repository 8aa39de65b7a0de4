/**
 * Finds and reads the files of one `.ai/` tier, with caps: a size limit per file, a file count
 * limit, and no symlink that leads out of the `.ai` folder.
 */
import type { Dirent } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import type { CreatedBy, RegistryIssue } from './types.js';
import { makeIssue, type FileLabel } from './validation-error.js';

export type SectionKind = RegistryIssue['kind'];

export interface FoundFile {
  kind: SectionKind;
  label: FileLabel;
  text: string;
  /** The registry tier's items that an agent created (load-registry.ts finds the project tier's itself). */
  created?: CreatedBy;
}

export interface WalkLimits {
  maxFileBytes: number;
  maxFiles: number;
}

export interface WalkResult {
  files: FoundFile[];
  /** realpath of the `.ai` folder, or null when there is none. */
  realRoot: string | null;
}

/** `.ai/scripts/` is what Kiwi MCP called `.ai/tools/`; both hold YAML tool manifests. */
const SECTIONS: ReadonlyArray<{ dir: string; kind: SectionKind; extensions: readonly string[] }> = [
  { dir: 'tools', kind: 'tool', extensions: ['.yaml', '.yml'] },
  { dir: 'scripts', kind: 'tool', extensions: ['.yaml', '.yml'] },
  { dir: 'directives', kind: 'directive', extensions: ['.md'] },
  { dir: 'knowledge', kind: 'knowledge', extensions: ['.md'] },
  { dir: 'pipelines', kind: 'pipeline', extensions: ['.yaml', '.yml'] },
];

const MAX_DEPTH = 32;

export async function realpathOrNull(target: string): Promise<string | null> {
  try {
    return await realpath(target);
  } catch {
    return null;
  }
}

interface WalkState {
  realRoot: string;
  limits: WalkLimits;
  errors: RegistryIssue[];
  signal: AbortSignal | undefined;
  files: FoundFile[];
  visited: Set<string>;
  counted: number;
  full: boolean;
}

/**
 * Reads every registry file under `aiDir` (missing folders are simply empty). `displayRoot` is
 * how messages name the folder: `.ai` for the project, `~/.ai` for the user.
 */
export async function walkTier(
  aiDir: string,
  displayRoot: string,
  limits: WalkLimits,
  errors: RegistryIssue[],
  signal?: AbortSignal,
): Promise<WalkResult> {
  const realRoot = await realpathOrNull(aiDir);
  if (realRoot === null) return { files: [], realRoot: null };
  const state: WalkState = { realRoot, limits, errors, signal, files: [], visited: new Set(), counted: 0, full: false };
  for (const section of SECTIONS) {
    const dir = path.join(aiDir, section.dir);
    const real = await realpathOrNull(dir);
    if (real === null) continue;
    if (!isInside(realRoot, real)) {
      errors.push(
        makeIssue(section.kind, { file: dir, display: `${displayRoot}/${section.dir}` }, {
          text: `is a symlink to ${real}, outside the .ai folder; it was skipped — copy the files into .ai instead`,
        }),
      );
      continue;
    }
    await walkDir(state, section, dir, real, `${displayRoot}/${section.dir}`, 0);
  }
  return { files: state.files, realRoot };
}

async function walkDir(
  state: WalkState,
  section: (typeof SECTIONS)[number],
  dir: string,
  realDir: string,
  display: string,
  depth: number,
): Promise<void> {
  if (depth > MAX_DEPTH || state.visited.has(realDir) || state.full) return;
  state.visited.add(realDir);
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (state.signal?.aborted) throw new KiwiError('TOOL_CANCELLED', 'loading the registry was cancelled');
    if (entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    const label: FileLabel = { file: full, display: `${display}/${entry.name}` };
    let isDir = entry.isDirectory();
    let isFile = entry.isFile();
    let real = path.join(realDir, entry.name);
    if (entry.isSymbolicLink()) {
      const target = await realpathOrNull(full);
      if (target === null) continue;
      if (!isInside(state.realRoot, target)) {
        if (isDir || section.extensions.includes(path.extname(entry.name).toLowerCase()) || (await isDirectory(target))) {
          state.errors.push(
            makeIssue(section.kind, label, {
              text: `is a symlink to ${target}, outside the .ai folder; it was skipped — copy the file into .ai instead`,
            }),
          );
        }
        continue;
      }
      real = target;
      isDir = await isDirectory(target);
      isFile = !isDir;
    }
    if (isDir) {
      await walkDir(state, section, full, real, label.display, depth + 1);
      continue;
    }
    if (!isFile || !section.extensions.includes(path.extname(entry.name).toLowerCase())) continue;
    if (state.counted >= state.limits.maxFiles) {
      state.full = true;
      state.errors.push(
        makeIssue(section.kind, label, {
          text: `more than ${state.limits.maxFiles} registry files in this tier; this file and the rest were skipped — move generated files out of .ai`,
        }),
      );
      return;
    }
    state.counted++;
    const text = await readCapped(full, state.limits.maxFileBytes, section.kind, label, state.errors);
    if (text !== null) state.files.push({ kind: section.kind, label, text });
  }
}

async function isDirectory(target: string): Promise<boolean> {
  try {
    return (await stat(target)).isDirectory();
  } catch {
    return false;
  }
}

function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

async function readCapped(file: string, cap: number, kind: SectionKind, label: FileLabel, errors: RegistryIssue[]): Promise<string | null> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    errors.push(makeIssue(kind, label, { text: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}); check its permissions` }));
    return null;
  }
  try {
    const size = (await handle.stat()).size;
    const tooBig = () =>
      makeIssue(kind, label, {
        text: `is larger than ${formatBytes(cap)}; it was skipped — keep registry files small and move data out of .ai`,
      });
    if (size > cap) {
      errors.push(tooBig());
      return null;
    }
    // The file may grow between stat and read: never read more than the cap allows.
    const buffer = Buffer.alloc(Math.min(size, cap) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > cap) {
      errors.push(tooBig());
      return null;
    }
    if (length === buffer.length) {
      errors.push(makeIssue(kind, label, { text: 'changed while it was being read; it was skipped — load the registry again' }));
      return null;
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, length));
    } catch {
      errors.push(makeIssue(kind, label, { text: 'is not valid UTF-8; save it as UTF-8' }));
      return null;
    }
  } finally {
    await handle.close();
  }
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
