import path from 'node:path';
import type { KeyRecord, KeyStore } from '../../clients/key-store.js';
import { openStateBackends } from '../state-backends.js';
import type { Role } from '../../policy/caller.js';
import { clientPolicyFile } from '../../policy/client-policy-file.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { KEYS_HELP } from './keys-help.js';
import { projectOptions } from '../../cli/project-options.js';

const USAGE = KEYS_HELP.usage;

/**
 * `kiwi keys`: client API keys for the gateway, stored hashed in .ai/state/keys.json, or with
 * DATABASE_URL in that Postgres, where every gateway sharing it reads them. A running gateway
 * picks changes up within a second (a new key at once). Once a key exists, every request needs
 * one. A key's roles (clients/access.ts) default to `client`; `--role` takes a role or a
 * comma-separated list, and may be repeated.
 */
export async function keysCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, KEYS_HELP);
  const extra = positionals.slice(2);
  if (extra.length > 0) throw new UsageError(`unexpected ${extra.map((e) => JSON.stringify(e)).join(' ')}; usage: ${USAGE}`);
  const root = projectOptions(ctx, values).projectDir;
  const state = await openStateBackends(root, ctx.env, { maxConnections: 1 });
  try {
    return await keysAction(ctx, state.keys(), root, values, positionals);
  } finally {
    await state.close();
  }
}

async function keysAction(ctx: CliContext, store: KeyStore, root: string, values: { policy?: string | undefined; role?: string[] | undefined; agent?: string[] | undefined; tool?: string[] | undefined; json?: boolean | undefined }, positionals: string[]): Promise<number> {
  const [action, target] = positionals;

  if (action === 'create') {
    if (target === undefined) throw new UsageError(`name the client the key is for, e.g. \`kiwi keys create ci-bot\`; usage: ${USAGE}`);
    let policy: string | undefined;
    if (values.policy !== undefined) {
      policy = await clientPolicyFile(root, path.resolve(ctx.cwd, values.policy), target);
    }
    const roles = values.role?.flatMap((r) => r.split(',')).map((r) => r.trim()).filter((r) => r !== '') as Role[] | undefined;
    const grants = { ...(roles ? { roles } : {}), ...(values.agent ? { agents: values.agent } : {}), ...(values.tool ? { tools: values.tool } : {}) };
    const { record, key } = await store.create(target, { ...grants, ...(policy === undefined ? {} : { policy }) });
    if (values.json) ctx.io.out(JSON.stringify({ ...record, key }));
    else {
      ctx.io.out(key);
      ctx.io.err(`kiwi: key ${record.id} for client ${record.client} (${describeGrants(record)}${policy ? `; policy ${policy}` : ''}) created in ${store.where}; it is shown once, only its hash is kept. Clients send it as \`Authorization: Bearer KEY\` or \`x-api-key: KEY\`.`);
    }
    return 0;
  }
  if (action === 'list') {
    if (target !== undefined) throw new UsageError(`\`kiwi keys list\` takes no name; usage: ${USAGE}`);
    const { keys } = await store.read();
    const shown = keys.map(({ hash: _hash, ...rest }) => rest);
    if (values.json) ctx.io.out(JSON.stringify(shown));
    else if (keys.length === 0) ctx.io.out(`no client keys in ${store.where}: the gateway serves loopback without keys, and refuses other addresses; \`kiwi keys create NAME\` makes one`);
    else for (const k of shown) ctx.io.out(`${k.id}  ${k.client}  ${describeGrants(k)}  created ${k.created}${k.revoked ? `  REVOKED ${k.revoked}` : ''}${k.policy ? `  policy ${k.policy}` : ''}`);
    return 0;
  }
  if (action === 'revoke') {
    if (target === undefined) throw new UsageError(`name a key id (key_…) or a client; usage: ${USAGE}`);
    const revoked = await store.revoke(target);
    if (values.json) ctx.io.out(JSON.stringify(revoked.map(({ hash: _hash, ...rest }) => rest)));
    else ctx.io.out(revoked.length === 0 ? `${target}: already revoked` : `revoked ${revoked.map((k) => `${k.id} (${k.client})`).join(', ')}`);
    return 0;
  }
  throw new UsageError(action === undefined ? `say what to do; usage: ${USAGE}` : `unknown action \`${action}\`; usage: ${USAGE}`);
}

/** `roles agent (agents support-*)`: what the key may do, as `kiwi keys list` shows it. */
function describeGrants(k: Pick<KeyRecord, 'roles' | 'agents' | 'tools'>): string {
  const scopes = [...(k.agents ? [`agents ${k.agents.join(',')}`] : []), ...(k.tools ? [`tools ${k.tools.join(',')}`] : [])];
  return `roles ${(k.roles ?? ['client']).join(',')}${scopes.length > 0 ? ` (${scopes.join('; ')})` : ''}`;
}
