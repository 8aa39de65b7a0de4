import { homedir } from 'node:os';
import path from 'node:path';
import { openRegistryTierDatabase, registryTierKey } from '../kernel/registry-tier-database.js';
import { loadRegistry, type Registry } from '../registry/load-registry.js';
import type { FoundFile } from '../registry/registry-files.js';
import type { RegistryIssue } from '../registry/types.js';
import { materializeTier, REGISTRY_CACHE_DIR } from '../store/registry-tier/materialize-tier.js';
import { readSelection, writeSelection } from '../store/registry-tier/tier-selection.js';
import { readRegistryPins, REGISTRY_CONFIG_FILE } from './registry-pins.js';

export interface ProjectRegistryOptions {
  /** The folder that holds `.ai/`. */
  projectDir: string;
  userDir?: string;
  /** `DATABASE_URL` from here says where the registry tier is. */
  env: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
}

/**
 * The registry a project runs: its `.ai/`, the user's `~/.ai/`, then the versions of the database
 * tier it pins in `.ai/config/registry.yaml`, and no other: what one project pushes or an agent
 * creates in the shared tier does not appear in another's catalog until that project pins it. A
 * tier that cannot be read (the server is down) is an error in the registry's list, not a
 * failure: the folders still load.
 */
export async function loadProjectRegistry(options: ProjectRegistryOptions): Promise<Registry> {
  const issues: RegistryIssue[] = [];
  const pinsFile = path.join(options.projectDir, REGISTRY_CONFIG_FILE);
  const pins = await readRegistryPins(pinsFile, options.projectDir);
  const registryTier = Object.keys(pins).length === 0 ? [] : await readTier(options, pins, pinsFile, issues);
  const registry = await loadRegistry({
    projectDir: options.projectDir,
    ...(options.userDir ? { userDir: options.userDir } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    registryTier,
  });
  registry.errors.push(...issues);
  return registry;
}

/** The pinned versions as the last load wrote them out, when it read the same pins from this tier; else the database's. */
async function readTier(options: ProjectRegistryOptions, pins: Record<string, string>, pinsFile: string, issues: RegistryIssue[]): Promise<FoundFile[]> {
  const userDir = options.userDir ?? homedir();
  const cacheDir = path.join(options.projectDir, REGISTRY_CACHE_DIR);
  const tierKey = registryTierKey({ env: options.env, userDir });
  const saved = await readSelection(cacheDir, tierKey, pins);
  if (saved !== undefined) return saved;
  const fresh: RegistryIssue[] = [];
  const found = await readDatabase(options, userDir, cacheDir, pins, pinsFile, fresh);
  issues.push(...fresh);
  // Not saved (a read-only checkout): the next load asks the database again, nothing worse.
  if (fresh.length === 0) await writeSelection(cacheDir, tierKey, pins, found).catch(() => undefined);
  return found;
}

async function readDatabase(options: ProjectRegistryOptions, userDir: string, cacheDir: string, pins: Record<string, string>, pinsFile: string, issues: RegistryIssue[]): Promise<FoundFile[]> {
  let opened;
  try {
    opened = await openRegistryTierDatabase({ env: options.env, userDir, create: false });
  } catch (error) {
    issues.push({ kind: 'tool', file: pinsFile, message: `registry tier: cannot be opened (${error instanceof Error ? error.message : String(error)}); the versions ${REGISTRY_CONFIG_FILE} pins are not loaded` });
    return [];
  }
  if (opened === undefined) {
    for (const id of Object.keys(pins)) issues.push(unknownPin(pinsFile, id, pins, 'there is no registry tier here (push one with `kiwi registry push`)'));
    return [];
  }
  try {
    const versions = await opened.tier.pinned(pins);
    const ids = new Set(versions.map((v) => v.id));
    for (const id of Object.keys(pins)) if (!ids.has(id)) issues.push(unknownPin(pinsFile, id, pins, `${opened.tier.where} has no such version (\`kiwi registry show ${id}\` lists them)`));
    return await materializeTier(versions, cacheDir, issues);
  } catch (error) {
    issues.push({ kind: 'tool', file: pinsFile, message: `registry tier: cannot be read (${error instanceof Error ? error.message : String(error)}); the versions ${REGISTRY_CONFIG_FILE} pins are not loaded` });
    return [];
  } finally {
    await opened.close();
  }
}

function unknownPin(file: string, id: string, pins: Record<string, string>, why: string): RegistryIssue {
  return { kind: 'tool', file, message: `${REGISTRY_CONFIG_FILE}: pins.${id}: ${id}@${pins[id]} is not loaded: ${why}` };
}
