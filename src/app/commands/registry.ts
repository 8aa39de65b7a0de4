import { homedir, hostname, userInfo } from 'node:os';
import path from 'node:path';
import { KiwiError } from '../../base/errors.js';
import { openRegistryTierDatabase, type OpenedRegistryTier } from '../../kernel/registry-tier-database.js';
import { REGISTRY_CONFIG_FILE, writeRegistryPin } from '../../project/registry-pins.js';
import { loadRegistry } from '../../registry/load-registry.js';
import { pullVersion } from '../../store/registry-tier/pull-version.js';
import { pushCandidates } from '../../store/registry-tier/push-items.js';
import type { RegistryTier } from '../../store/registry-tier/sql-registry-tier.js';
import { itemId, itemVersion, type TierVersion } from '../../store/registry-tier/tier-version.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { REGISTRY_HELP } from './registry-help.js';
import { projectOptions } from '../../cli/project-options.js';

const USAGE = REGISTRY_HELP.usage;

const ACTIONS = ['push', 'pull', 'pin', 'unpin', 'list', 'show'] as const;

type Flags = { json?: boolean | undefined; force?: boolean | undefined; project?: string | undefined };

/**
 * `kiwi registry`: the database tier of the registry (the Postgres of DATABASE_URL, else an
 * embedded database in ~/.ai/state/registry). `push` sends the project's items — every version
 * is kept, and a version once pushed never changes; `pin` makes the project run one version
 * (`.ai/config/registry.yaml`; a project runs only what it pins), `unpin` stops it; `pull` writes
 * one version into the project's `.ai/`; `list` and `show` say what the tier holds.
 */
export async function registryCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, REGISTRY_HELP);
  const [action, ...rest] = positionals;
  if (!ACTIONS.includes(action as (typeof ACTIONS)[number])) {
    throw new UsageError(action === undefined ? `say what to do; usage: ${USAGE}` : `unknown action \`${action}\`; usage: ${USAGE}`);
  }
  if (action === 'list' && rest.length > 0) throw new UsageError(`\`kiwi registry list\` takes no argument; usage: ${USAGE}`);
  if (action !== 'list' && action !== 'push' && rest.length !== 1) throw new UsageError(`\`kiwi registry ${action}\` takes one id${action === 'pull' || action === 'pin' ? ' (ID or ID@VERSION)' : ''}; usage: ${USAGE}`);
  if (values.force && action !== 'pull') throw new UsageError(`--force is for \`kiwi registry pull\`; usage: ${USAGE}`);
  const options = projectOptions(ctx, values, { needsAi: action === 'push' || action === 'pull' || action === 'pin' || action === 'unpin' });
  if (action === 'unpin') return unpin(ctx, options.projectDir, rest[0] as string, values);
  const userDir = options.userDir ?? homedir();
  const onWait = (owner: number): void => ctx.io.err(`kiwi: waiting for process ${owner}, which has the registry tier open`);
  const opened = await openRegistryTierDatabase({ env: ctx.env, userDir, create: action === 'push', onWait });
  if (opened === undefined) {
    throw new KiwiError('NOT_FOUND', `there is no registry tier yet (no DATABASE_URL, and no ${path.join(userDir, '.ai', 'state', 'registry')}); \`kiwi registry push\` makes one`);
  }
  try {
    if (action === 'push') return await push(ctx, opened, options.projectDir, options.userDir, rest, values);
    if (action === 'pull') return await pull(ctx, opened.tier, options.projectDir, rest[0] as string, values);
    if (action === 'pin') return await pin(ctx, opened.tier, options.projectDir, rest[0] as string, values);
    if (action === 'list') return await list(ctx, opened.tier, values);
    return await show(ctx, opened.tier, rest[0] as string, values);
  } finally {
    await opened.close();
  }
}

async function push(ctx: CliContext, opened: OpenedRegistryTier, projectDir: string, userDir: string | undefined, paths: string[], values: Flags): Promise<number> {
  const registry = await loadRegistry({ projectDir, ...(userDir ? { userDir } : {}) });
  const aiDir = path.join(projectDir, '.ai');
  const invalid = registry.errors.filter((e) => e.file.startsWith(aiDir + path.sep));
  if (invalid.length > 0) ctx.io.err(`kiwi: ${invalid.length} invalid files in .ai/ are not pushed (\`kiwi tools validate\` names them)`);
  const candidates = await pushCandidates(registry, aiDir, paths.map((p) => path.resolve(ctx.cwd, p)));
  if (candidates.length === 0) throw new KiwiError('INVALID_INPUT', paths.length === 0 ? 'the project tier has no tools, directives or knowledge to push' : `no item of the project tier is defined in ${paths.join(', ')}`);
  const by = `${userInfo().username}@${hostname()}`;
  const results: Array<{ item: string; status: string; message?: string }> = [];
  for (const [index, c] of candidates.entries()) {
    const outcome = c.version === undefined ? { status: 'invalid', message: c.problem ?? 'invalid' } : await opened.tier.push(c.version, by);
    const message = 'message' in outcome ? outcome.message : undefined;
    results.push({ item: c.label, status: outcome.status, ...(message === undefined ? {} : { message }) });
    ctx.io.err(`[${index + 1}/${candidates.length}] ${c.label}: ${outcome.status}${message === undefined ? '' : ` — ${message}`}`);
  }
  const count = (status: string): number => results.filter((r) => r.status === status).length;
  const failed = count('conflict') + count('invalid');
  if (values.json) ctx.io.out(JSON.stringify(results));
  else ctx.io.out(`pushed to ${opened.tier.where}: ${count('added')} added, ${count('unchanged')} unchanged, ${count('conflict')} refused (version exists with other content), ${count('invalid')} invalid`);
  return failed > 0 ? 1 : 0;
}

/** `ID` or `ID@VERSION`, checked. */
function itemSpec(spec: string): { id: string; version: string | undefined } {
  const at = spec.lastIndexOf('@');
  const [id, version] = at === -1 ? [spec, undefined] : [spec.slice(0, at), spec.slice(at + 1)];
  if (!itemId.safeParse(id).success) throw new UsageError(`${JSON.stringify(id)} is not an item id (A-Z, a-z, 0-9, "_", "." and "-"); usage: ${USAGE}`);
  if (version !== undefined && !itemVersion.safeParse(version).success) throw new UsageError(`${JSON.stringify(version)} is not a version; write ID@1.2.0`);
  return { id, version };
}

/** The version `spec` names, or the item's latest. */
async function foundVersion(tier: RegistryTier, spec: string): Promise<TierVersion> {
  const { id, version } = itemSpec(spec);
  const got = await tier.get(id, version);
  if (got === undefined) {
    throw new KiwiError('NOT_FOUND', `${tier.where} has no ${version === undefined ? id : `${id}@${version}`}; \`kiwi registry ${version === undefined ? 'list' : `show ${id}`}\` says what it has`);
  }
  return got;
}

async function pin(ctx: CliContext, tier: RegistryTier, projectDir: string, spec: string, values: Flags): Promise<number> {
  const v = await foundVersion(tier, spec);
  const before = await writeRegistryPin(path.join(projectDir, REGISTRY_CONFIG_FILE), projectDir, v.id, v.version);
  if (values.json) ctx.io.out(JSON.stringify({ id: v.id, version: v.version, before: before ?? null }));
  else ctx.io.out(`pinned ${v.type} ${v.id}@${v.version} in ${REGISTRY_CONFIG_FILE}${before === undefined || before === v.version ? '' : ` (was ${before})`}; it loads from the next \`kiwi run\` or gateway start`);
  return 0;
}

async function unpin(ctx: CliContext, projectDir: string, id: string, values: Flags): Promise<number> {
  itemSpec(id);
  const before = await writeRegistryPin(path.join(projectDir, REGISTRY_CONFIG_FILE), projectDir, id, undefined);
  if (before === undefined) throw new KiwiError('NOT_FOUND', `${REGISTRY_CONFIG_FILE} pins no ${JSON.stringify(id)}; nothing to unpin`);
  if (values.json) ctx.io.out(JSON.stringify({ id, before }));
  else ctx.io.out(`unpinned ${id} (was ${before}) in ${REGISTRY_CONFIG_FILE}; the project no longer loads it from the registry tier`);
  return 0;
}

async function pull(ctx: CliContext, tier: RegistryTier, projectDir: string, spec: string, values: Flags): Promise<number> {
  const found = await foundVersion(tier, spec);
  const outcome = await pullVersion(found, path.join(projectDir, '.ai'), { force: values.force === true });
  if (outcome.status === 'refused') {
    throw new KiwiError('CONFLICT', `${found.id}@${found.version} was not pulled: ${outcome.changed.join(', ')} ${outcome.changed.length === 1 ? 'differs' : 'differ'} from it (changed here, or another version); pull with --force to overwrite, or move ${outcome.changed.length === 1 ? 'it' : 'them'} away first`);
  }
  if (values.json) ctx.io.out(JSON.stringify({ id: found.id, version: found.version, ...outcome }));
  else ctx.io.out(`pulled ${found.type} ${found.id}@${found.version} into .ai/${found.folder}: ${outcome.written.length} written, ${outcome.unchanged.length} unchanged`);
  return 0;
}

async function list(ctx: CliContext, tier: RegistryTier, values: Flags): Promise<number> {
  const items = await tier.list();
  if (values.json) ctx.io.out(JSON.stringify(items));
  else if (items.length === 0) ctx.io.out(`${tier.where} is empty; \`kiwi registry push\` sends the project's items`);
  else for (const i of items) ctx.io.out(`${i.id}  ${i.type}  latest ${i.latest}  (${i.versions} version${i.versions === 1 ? '' : 's'}, updated ${i.updatedAt})`);
  return 0;
}

async function show(ctx: CliContext, tier: RegistryTier, id: string, values: Flags): Promise<number> {
  const versions = await tier.versions(id);
  if (versions.length === 0) throw new KiwiError('NOT_FOUND', `${tier.where} has no item ${JSON.stringify(id)}; \`kiwi registry list\` shows what it has`);
  if (values.json) {
    ctx.io.out(JSON.stringify(versions));
    return 0;
  }
  for (const v of versions) {
    ctx.io.out(`${v.id}@${v.version}  ${v.type}  pushed ${v.pushedAt} by ${v.pushedBy}  digest ${v.digest.slice(0, 16)}  ${v.signature === null ? 'unsigned' : `signed ${v.signature.slice(0, 16)}`}`);
    for (const f of v.files) ctx.io.out(`  .ai/${v.folder}/${f.path}  ${f.size} bytes${f.path === v.manifest ? '  (manifest)' : ''}`);
  }
  return 0;
}
