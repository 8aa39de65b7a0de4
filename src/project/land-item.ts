import { mkdir, readdir, realpath, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import type { ToolResult } from '../contracts/tool-result.js';
import { KiwiError } from '../errors.js';
import { openRegistryTierDatabase } from '../kernel/registry-tier-database.js';
import { folderInside } from '../policy/folder-inside.js';
import type { ItemCreations, ToolCall } from '../proxy/tool-call.js';
import { adoptItem } from '../registry/adopt-item.js';
import { parseItem, type Proposal, type ProposedItem } from '../registry/item-proposal.js';
import { successionProblem } from '../registry/item-succession.js';
import type { Registry, RegistryIssue } from '../registry/types.js';
import { materializeTier, REGISTRY_CACHE_DIR } from '../store/registry-tier/materialize-tier.js';
import { tierFile } from '../store/registry-tier/tier-version.js';
import { readRegistryPins, REGISTRY_CONFIG_FILE } from './registry-pins.js';

/**
 * Where an allowed creation lands. In the project tier: `.ai/tools/created/ID/` (the manifest and
 * its scripts), `.ai/directives/created/NAME.md` (a later version beside it as `NAME.vX.md`, as
 * annealing writes them), `.ai/knowledge/created/ID.md`; a tool's or entry's version it replaces
 * is moved into `.versions/` beside it, which the registry does not load, so no version is lost.
 * In the registry tier: a pushed version (every version is kept there). Either way the running
 * registry adopts it, so the next call finds it. One creation at a time per process: the check
 * against the registry and the write are one step.
 */
export interface LandDeps {
  /** The project root (real path). */
  root: string;
  registry: Registry;
  env: Readonly<Record<string, string | undefined>>;
  /** The folder that holds the user's `.ai` (the embedded registry tier): default the home folder. */
  userDir?: string;
}

export function createItemCreations(deps: LandDeps): ItemCreations {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    land(proposal, call) {
      const landing = queue.then(() => land(deps, proposal, call));
      queue = landing.catch(() => undefined);
      return landing;
    },
  };
}

async function land(deps: LandDeps, proposal: Proposal, call: ToolCall): Promise<ToolResult> {
  const aiDir = path.join(deps.root, '.ai');
  const problem = successionProblem(proposal, deps.registry, aiDir);
  if (problem !== undefined) throw new KiwiError('CONFLICT', problem);
  const landed = proposal.tier === 'project' ? await landInProject(aiDir, proposal, existing(deps.registry, proposal)) : await landInTier(deps, proposal, call);
  if (landed.pinned === undefined) adoptItem(deps.registry, landed.item);
  const what = `${proposal.kind} ${proposal.id}@${proposal.version}`;
  const where = landed.file === undefined ? `the registry tier (${landed.where})` : path.relative(deps.root, landed.file);
  const runs = landed.pinned === undefined ? 'it runs from now on' : `${REGISTRY_CONFIG_FILE} pins ${proposal.id} to ${landed.pinned}, so that version still runs until the pin changes`;
  return {
    text: `created ${what}, signed, in ${where}; ${runs}`,
    data: { item_type: proposal.kind, item_id: proposal.id, version: proposal.version, tier: proposal.tier, signature: proposal.signature, ...(landed.file === undefined ? {} : { file: path.relative(deps.root, landed.file) }), ...(landed.pinned === undefined ? {} : { pinned: landed.pinned }) },
    isError: false,
  };
}

interface Landed {
  item: ProposedItem;
  file?: string;
  where?: string;
  pinned?: string;
}

function existing(registry: Registry, proposal: Proposal): { version: string; path: string } | undefined {
  const map = proposal.kind === 'tool' ? registry.tools : proposal.kind === 'directive' ? registry.directives : registry.knowledge;
  const item = map.get(proposal.id);
  return item === undefined ? undefined : { version: item.version, path: item.source.path };
}

async function landInProject(aiDir: string, proposal: Proposal, previous: { version: string; path: string } | undefined): Promise<Landed> {
  await mkdir(aiDir, { recursive: true });
  const folder = await madeInside(await realpath(aiDir), proposal.folder.split('/'));
  const manifest = proposal.kind === 'directive' && previous !== undefined ? `${proposal.id}.v${proposal.version}.md` : proposal.manifest;
  if (previous !== undefined && proposal.kind !== 'directive') await keepVersion(folder, proposal, previous);
  for (const file of proposal.files) {
    const target = path.join(folder, file.name === proposal.manifest ? manifest : file.name);
    try {
      await writeFile(target, file.text, { flag: 'wx', mode: 0o644 });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'EEXIST') throw new KiwiError('CONFLICT', `${target} already exists and was not written by a creation; move it away or choose another id`);
      throw error;
    }
  }
  const file = path.join(folder, manifest);
  return { item: reparsed(proposal, file, 'project'), file };
}

/** The replaced version's files (all but hidden ones) moved into `.versions/VERSION/` of its folder. */
async function keepVersion(folder: string, proposal: Proposal, previous: { version: string; path: string }): Promise<void> {
  const kept = await madeInside(folder, ['.versions', previous.version]);
  const names = proposal.kind === 'tool' ? (await readdir(folder)).filter((n) => !n.startsWith('.')) : [path.basename(previous.path)];
  for (const name of names) await rename(path.join(folder, name), path.join(kept, name));
}

async function landInTier(deps: LandDeps, proposal: Proposal, call: ToolCall): Promise<Landed> {
  const userDir = deps.userDir ?? homedir();
  const opened = await openRegistryTierDatabase({ env: deps.env, userDir, create: true });
  if (opened === undefined) throw new KiwiError('INTERNAL', 'the registry tier could not be opened');
  try {
    const files = proposal.files.map((f) => tierFile(f.name, Buffer.from(f.text, 'utf8')));
    const version = { id: proposal.id, type: proposal.kind, version: proposal.version, folder: proposal.folder, manifest: proposal.manifest, signature: proposal.signature, files };
    const outcome = await opened.tier.push(version, call.client ?? 'local');
    if (outcome.status === 'conflict') throw new KiwiError('CONFLICT', outcome.message);
    const stored = await opened.tier.get(proposal.id, proposal.version);
    if (stored === undefined) throw new KiwiError('INTERNAL', `${opened.tier.where} lost ${proposal.id}@${proposal.version} right after it was pushed`);
    const issues: RegistryIssue[] = [];
    const [found] = await materializeTier([stored], path.join(deps.root, REGISTRY_CACHE_DIR), issues);
    if (found === undefined) throw new KiwiError('INTERNAL', issues.map((i) => i.message).join('; ') || 'the pushed version could not be written out');
    const pins = await readRegistryPins(path.join(deps.root, REGISTRY_CONFIG_FILE), deps.root);
    const pinned = pins[proposal.id];
    return { item: reparsed(proposal, found.label.file, 'registry'), where: opened.tier.where, ...(pinned === undefined ? {} : { pinned }) };
  } finally {
    await opened.close();
  }
}

/** The item as the registry reads it from where it landed: its source is that file. */
function reparsed(proposal: Proposal, file: string, tier: 'project' | 'registry'): ProposedItem {
  const text = proposal.files[0]?.text ?? '';
  const label = { file, display: file };
  const result = parseItem(proposal.kind, text, label, tier);
  if (!result.ok) throw new KiwiError('INTERNAL', `the landed ${proposal.kind} no longer parses: ${result.issues.map((i) => i.message).join('; ')}`);
  return result.value;
}

async function madeInside(realBase: string, segments: readonly string[]): Promise<string> {
  const made = await folderInside(realBase, segments);
  if (!made.ok) throw new KiwiError('POLICY_DENIED', `${path.join(realBase, ...segments)} leads outside ${realBase} (to ${made.outside}); created items land only inside .ai/`);
  return made.dir;
}
