import { mkdir, readdir, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import type { ToolResult } from '../contracts/tool-result.js';
import { KiwiError } from '../base/errors.js';
import { openRegistryTierDatabase } from '../kernel/registry-tier-database.js';
import { folderInside } from '../policy/folder-inside.js';
import { proposer } from '../proxy/plan-creation.js';
import type { Creation, ItemCreations, ToolCall } from '../proxy/tool-call.js';
import { adoptItem } from '../registry/adopt-item.js';
import { parseItem, type Proposal, type ProposedItem } from '../registry/item-proposal.js';
import { bytesOwnedBy, ownersFolder, ownerText, readOwners } from '../registry/item-owners.js';
import { successionProblem, type Proposer } from '../registry/item-succession.js';
import { replaceFile } from '../base/replace-file.js';
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
    land(creation, call) {
      const landing = queue.then(() => land(deps, creation, call));
      queue = landing.catch(() => undefined);
      return landing;
    },
  };
}

async function land(deps: LandDeps, creation: Creation, call: ToolCall): Promise<ToolResult> {
  const { proposal } = creation;
  const aiDir = path.join(deps.root, '.ai');
  const by = proposer(call);
  const problem = successionProblem(proposal, deps.registry, aiDir, by);
  if (problem !== undefined) throw new KiwiError('CONFLICT', problem);
  const landed = proposal.tier === 'project' ? await landInProject(aiDir, creation, existing(deps.registry, proposal), by) : await landInTier(deps, creation, call, by);
  if (landed.pinned === undefined) adoptItem(deps.registry, landed.item);
  const what = `${proposal.kind} ${proposal.id}@${proposal.version}`;
  const where = landed.file === undefined ? `the registry tier (${landed.where})` : path.relative(deps.root, landed.file);
  const runs =
    landed.pinned !== undefined
      ? `${REGISTRY_CONFIG_FILE} pins ${proposal.id} to ${landed.pinned}, so that version still runs until the pin changes`
      : proposal.tier === 'registry'
        ? `it runs in this gateway from now on; a project loads the registry tier's items it pins, so a person runs \`kiwi registry pin ${proposal.id}@${proposal.version}\` for it to run after a restart and in other processes`
        : 'it runs from now on';
  return {
    text: `created ${what} of client ${landed.owner}, signed, in ${where}; ${runs}`,
    data: { item_type: proposal.kind, item_id: proposal.id, version: proposal.version, tier: proposal.tier, owner: landed.owner, signature: proposal.signature, ...(landed.file === undefined ? {} : { file: path.relative(deps.root, landed.file) }), ...(landed.pinned === undefined ? {} : { pinned: landed.pinned }) },
    isError: false,
  };
}

interface Landed {
  item: ProposedItem;
  /** The client the item belongs to. */
  owner: string;
  file?: string;
  where?: string;
  pinned?: string;
}

function existing(registry: Registry, proposal: Proposal): { version: string; path: string } | undefined {
  const map = proposal.kind === 'tool' ? registry.tools : proposal.kind === 'directive' ? registry.directives : registry.knowledge;
  const item = map.get(proposal.id);
  return item === undefined ? undefined : { version: item.version, path: item.source.path };
}

/**
 * A new item is its creator's; a new version stays its owner's (an admin may add one). The owner
 * file is written first, so no landed item is without one; it counts every kept version's bytes
 * against the owner's quota.
 */
async function landInProject(aiDir: string, creation: Creation, previous: { version: string; path: string } | undefined, by: Proposer): Promise<Landed> {
  const { proposal } = creation;
  await mkdir(aiDir, { recursive: true });
  const realAi = await realpath(aiDir);
  const owners = await readOwners(realAi);
  const record = previous === undefined ? undefined : owners.get(proposal.kind)?.get(proposal.id);
  const owner = record?.client ?? by.client;
  checkQuota(bytesOwnedBy(owners, owner), proposalBytes(proposal), creation.quotaBytes, owner, 'in this project');
  const ownerFile = path.join(await madeInside(realAi, ownersFolder(proposal.kind)), proposal.id);
  await replaceFile(ownerFile, ownerText({ client: owner, bytes: (record?.bytes ?? 0) + proposalBytes(proposal) }));
  try {
    const file = await writeItem(realAi, proposal, previous);
    return { item: reparsed(proposal, file, 'project', owner), owner, file };
  } catch (error) {
    // Nothing new landed: the owner file says what it said before.
    await (record === undefined ? rm(ownerFile, { force: true }) : replaceFile(ownerFile, ownerText(record))).catch(() => undefined);
    throw error;
  }
}

/** The proposal's files in its folder (the version it replaces kept aside); answers the manifest's path. */
async function writeItem(realAi: string, proposal: Proposal, previous: { version: string; path: string } | undefined): Promise<string> {
  const folder = await madeInside(realAi, proposal.folder.split('/'));
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
  return path.join(folder, manifest);
}

function proposalBytes(proposal: Proposal): number {
  return proposal.files.reduce((sum, f) => sum + Buffer.byteLength(f.text, 'utf8'), 0);
}

function checkQuota(used: number, adding: number, quota: number, owner: string, where: string): void {
  if (used + adding <= quota) return;
  throw new KiwiError(
    'QUOTA_EXCEEDED',
    `client ${owner}'s created items keep ${used} bytes ${where}, and this one adds ${adding}: more than the ${quota} allowed (\`created_items.quota_mb\` in the policy); a person may remove old ones (every version is kept) or raise the quota`,
  );
}

/** The replaced version's files (all but hidden ones) moved into `.versions/VERSION/` of its folder. */
async function keepVersion(folder: string, proposal: Proposal, previous: { version: string; path: string }): Promise<void> {
  const kept = await madeInside(folder, ['.versions', previous.version]);
  const names = proposal.kind === 'tool' ? (await readdir(folder)).filter((n) => !n.startsWith('.')) : [path.basename(previous.path)];
  for (const name of names) await rename(path.join(folder, name), path.join(kept, name));
}

/** Pushed as the caller; refused in the push's own transaction unless the item is new or the caller's (an admin's push is not held to it). */
async function landInTier(deps: LandDeps, creation: Creation, call: ToolCall, by: Proposer): Promise<Landed> {
  const { proposal } = creation;
  const userDir = deps.userDir ?? homedir();
  const opened = await openRegistryTierDatabase({ env: deps.env, userDir, create: true });
  if (opened === undefined) throw new KiwiError('INTERNAL', 'the registry tier could not be opened');
  try {
    checkQuota(await opened.tier.createdBytes(call.caller.client), proposalBytes(proposal), creation.quotaBytes, call.caller.client, `in ${opened.tier.where}`);
    const files = proposal.files.map((f) => tierFile(f.name, Buffer.from(f.text, 'utf8')));
    const version = { id: proposal.id, type: proposal.kind, version: proposal.version, folder: proposal.folder, manifest: proposal.manifest, signature: proposal.signature, files };
    const outcome = await opened.tier.push(version, call.caller.client, by.admin ? {} : { ownedBy: call.caller.client });
    if (outcome.status === 'conflict') throw new KiwiError('CONFLICT', outcome.message);
    const stored = await opened.tier.get(proposal.id, proposal.version);
    if (stored === undefined) throw new KiwiError('INTERNAL', `${opened.tier.where} lost ${proposal.id}@${proposal.version} right after it was pushed`);
    const issues: RegistryIssue[] = [];
    const [found] = await materializeTier([stored], path.join(deps.root, REGISTRY_CACHE_DIR), issues);
    if (found === undefined) throw new KiwiError('INTERNAL', issues.map((i) => i.message).join('; ') || 'the pushed version could not be written out');
    const pins = await readRegistryPins(path.join(deps.root, REGISTRY_CONFIG_FILE), deps.root);
    const pinned = pins[proposal.id];
    return { item: reparsed(proposal, found.label.file, 'registry', stored.owner), owner: stored.owner, where: opened.tier.where, ...(pinned === undefined ? {} : { pinned }) };
  } finally {
    await opened.close();
  }
}

/** The item as the registry reads it from where it landed: its source is that file, created by an agent of `owner`. */
function reparsed(proposal: Proposal, file: string, tier: 'project' | 'registry', owner: string): ProposedItem {
  const text = proposal.files[0]?.text ?? '';
  const label = { file, display: file };
  const result = parseItem(proposal.kind, text, label, tier);
  if (!result.ok) throw new KiwiError('INTERNAL', `the landed ${proposal.kind} no longer parses: ${result.issues.map((i) => i.message).join('; ')}`);
  result.value.item.source = { ...result.value.item.source, created: { owner } };
  return result.value;
}

async function madeInside(realBase: string, segments: readonly string[]): Promise<string> {
  const made = await folderInside(realBase, segments);
  if (!made.ok) throw new KiwiError('POLICY_DENIED', `${path.join(realBase, ...segments)} leads outside ${realBase} (to ${made.outside}); created items land only inside .ai/`);
  return made.dir;
}
