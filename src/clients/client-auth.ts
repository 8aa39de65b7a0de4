/**
 * Who is calling: a client key (`Authorization: Bearer …` or `x-api-key: …`, the OpenAI and
 * Anthropic SDKs' own headers) looked up in the key store, or — only on loopback and only while
 * no key was ever made — the one local client. Once a key exists every request needs one, so
 * creating a key is how a gateway is locked; revoking keys never opens it again (deleting the
 * key file does, on loopback).
 *
 * The store is re-read when it changes (looked at no more than once a second, and when a key it
 * does not know comes, at most every 250 ms: a key just made through another replica works within
 * that), so `kiwi keys create|revoke` works on a running gateway. A store or client
 * policy that cannot be read fails closed: every request is refused with the reason.
 */
import path from 'node:path';
import { describeError } from '../base/errors.js';
import { LOCAL_CLIENT } from './access.js';
import { loadPolicyFile } from '../policy/policy-file.js';
import { childContext, type PermissionContext } from '../policy/permission-context.js';
import { ROLES, type Caller } from '../policy/caller.js';
import { hashKey, type KeyRecord, type KeyStore } from './key-store.js';

export { LOCAL_CLIENT };
/** The one caller of a gateway without keys on loopback, the CLI and stdio MCP: one person's machine, every role. */
export const LOCAL_CALLER: Caller = Object.freeze({ client: LOCAL_CLIENT, roles: ROLES, agents: ['*'], tools: ['*'] });

export type AuthResult = { ok: true; caller: Caller; key?: KeyIdentity } | { ok: false; status: 401 | 403 | 503; message: string };

/** Which key a caller came with: its public id, and its hash (which never leaves the gateway; console sessions are signed with it). */
export interface KeyIdentity {
  id: string;
  hash: string;
}

export interface AuthHeaders {
  authorization?: string | undefined;
  apiKey?: string | undefined;
}

export interface ClientAuthOptions {
  /** The project root: client policies named in the key file are read relative to it. */
  root: string;
  /** The keys: normally `<root>/.ai/state/keys.json` (key-store.ts), or Postgres (sql-key-store.ts). */
  store: KeyStore;
  /** The project policy: a client's own policy can only narrow it. */
  policy: PermissionContext;
  /** True only when the gateway listens on loopback: then, with no keys, requests are served as the local client. */
  openWithoutKeys: boolean;
  /** How often the store may be looked at for changes (default 1000 ms). */
  recheckMs?: number;
  now?: () => number;
}

export interface ClientAuth {
  authenticate(headers: AuthHeaders): Promise<AuthResult>;
  /**
   * The store was changed through this gateway (the admin API made or revoked a key): the next
   * request reads it, so a revoked key is refused at once here (other gateways within recheckMs).
   */
  changed(): void;
  /** The active key with this id, and who it makes the caller; undefined when there is none (unknown, revoked, unusable policy). */
  keyById(id: string): Promise<{ caller: Caller; key: KeyIdentity } | undefined>;
  /** For the banner and /healthz: `open` (loopback, no keys), `keys` (every request needs one), or `closed` (no usable keys). */
  mode(): Promise<{ mode: 'open' | 'keys' | 'closed'; activeKeys: number; clients: number }>;
}

interface Loaded {
  stamp: string;
  byHash: Map<string, { record: KeyRecord; caller?: Caller; error?: string }>;
  active: number;
  /** Keys in the file, revoked ones included: any at all means keys are required. */
  total: number;
  clients: number;
  error?: string;
}

const MAX_HEADER = 512;
/** An unknown key makes the store be looked at again at once, but no more often than this (a flood of wrong keys must not become a flood of reads); a store may say less. */
const MISS_RECHECK_MS = 250;

export function createClientAuth(options: ClientAuthOptions): ClientAuth {
  const recheckMs = options.recheckMs ?? 1000;
  const missRecheckMs = options.store.missRecheckMs ?? MISS_RECHECK_MS;
  const now = options.now ?? Date.now;
  let loaded: Loaded | undefined;
  let checkedAt = -Infinity;
  let loading: Promise<Loaded> | undefined;

  async function load(stamp: string): Promise<Loaded> {
    try {
      const data = await options.store.read();
      const active = data.keys.filter((k) => k.revoked === undefined);
      const byHash = new Map<string, { record: KeyRecord; caller?: Caller; error?: string }>();
      for (const record of active) byHash.set(record.hash, { record, ...(await keyCaller(record, options)) });
      return { stamp, byHash, active: active.length, total: data.keys.length, clients: new Set(active.map((k) => k.client)).size };
    } catch (error) {
      return { stamp, byHash: new Map(), active: 0, total: 0, clients: 0, error: describeError(error) };
    }
  }

  let missedAt = -Infinity;
  let missReload: Promise<Loaded> | undefined;

  /**
   * The store read again for a key it does not know: at once, unless it was read for a miss less
   * than missRecheckMs ago; then after the rest of that time. Misses meanwhile wait for the same
   * read: a key just made elsewhere is served after at most that wait, never refused, and a flood
   * of wrong keys reads the store at most once per missRecheckMs.
   */
  function reloadForMiss(): Promise<Loaded> {
    missReload ??= (async () => {
      const wait = missedAt + missRecheckMs - now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      missedAt = now();
      return current(true);
    })().finally(() => (missReload = undefined));
    return missReload;
  }

  /** Bumped by changed(): a read that started before it may not be kept. */
  let generation = 0;

  async function current(force = false): Promise<Loaded> {
    if (!force && loaded !== undefined && now() - checkedAt < recheckMs) return loaded;
    if (loading !== undefined) return loading;
    const started = generation;
    const read = (async () => {
      const stamp = await options.store.stamp().catch((error: unknown) => `error:${describeError(error)}`);
      const fresh = loaded?.stamp === stamp ? loaded : await load(stamp);
      if (started === generation) {
        checkedAt = now();
        loaded = fresh;
      }
      return fresh;
    })().finally(() => {
      if (loading === read) loading = undefined;
    });
    loading = read;
    return read;
  }

  async function authenticate(headers: AuthHeaders): Promise<AuthResult> {
    let store = await current();
    const presented = presentedKey(headers);
    if (presented.ok && !store.byHash.has(hashKey(presented.key))) {
      // Open on loopback, every client's SDK sends some key: it is served anyway, so it never
      // waits for a look, and looks at most every missRecheckMs for a first key made elsewhere.
      const open = store.total === 0 && options.openWithoutKeys;
      if (!open || now() - missedAt >= missRecheckMs) store = await reloadForMiss();
    }
    if (store.error !== undefined) return { ok: false, status: 503, message: `The gateway's key store cannot be read, so no request is served: ${store.error}` };
    if (store.total === 0 && options.openWithoutKeys) return { ok: true, caller: LOCAL_CALLER };
    if (store.active === 0) {
      return { ok: false, status: 401, message: 'This gateway has no active client keys, so it serves nobody; create one with `kiwi keys create NAME` and send it as `Authorization: Bearer KEY` or `x-api-key: KEY`' };
    }
    if (!presented.ok) return { ok: false, status: 401, message: presented.message };
    const entry = store.byHash.get(hashKey(presented.key));
    if (entry === undefined) return { ok: false, status: 401, message: 'The API key is not valid: it was revoked, belongs to another gateway, or was mistyped; `kiwi keys list` shows the active keys' };
    if (entry.caller === undefined) return { ok: false, status: 403, message: entry.error ?? 'this client cannot be served' };
    return { ok: true, caller: entry.caller, key: { id: entry.record.id, hash: entry.record.hash } };
  }

  async function keyById(id: string): ReturnType<ClientAuth['keyById']> {
    const store = await current();
    for (const entry of store.byHash.values()) {
      if (entry.record.id === id && entry.caller !== undefined) return { caller: entry.caller, key: { id, hash: entry.record.hash } };
    }
    return undefined;
  }

  async function mode(): ReturnType<ClientAuth['mode']> {
    const store = await current();
    const counts = { activeKeys: store.active, clients: store.clients };
    if (store.total === 0 && options.openWithoutKeys && store.error === undefined) return { mode: 'open', ...counts };
    return { mode: store.error !== undefined || store.active === 0 ? 'closed' : 'keys', ...counts };
  }

  function changed(): void {
    generation++;
    checkedAt = -Infinity;
    loading = undefined;
  }

  return { authenticate, changed, keyById, mode };
}

/**
 * The caller a key is served as: its client, roles and scopes, and its policy file (when it
 * names one) narrowing the project's policy; or why it cannot be served (the file does not parse).
 */
export async function keyCaller(record: KeyRecord, options: Pick<ClientAuthOptions, 'root' | 'policy'>): Promise<{ caller: Caller } | { error: string }> {
  const grants: Caller = { client: record.client, roles: record.roles ?? ['client'], ...(record.agents ? { agents: record.agents } : {}), ...(record.tools ? { tools: record.tools } : {}) };
  if (record.policy === undefined) return { caller: grants };
  try {
    const own = await loadPolicyFile(path.resolve(options.root, record.policy), options.root);
    const context = childContext(options.policy, own.rules, `client ${record.client} (${own.label})`);
    return { caller: { ...grants, context } };
  } catch (error) {
    return { error: `the policy of client ${record.client} cannot be used (${describeError(error)}); fix ${record.policy}, or revoke and recreate the key` };
  }
}

type Presented = { ok: true; key: string } | { ok: false; message: string };

const HOW = 'send the key as `Authorization: Bearer KEY` (OpenAI SDKs: apiKey) or `x-api-key: KEY` (Anthropic SDKs: apiKey)';

function presentedKey(headers: AuthHeaders): Presented {
  const bearer = headers.authorization === undefined ? undefined : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(headers.authorization)?.[1];
  if (headers.authorization !== undefined && bearer === undefined) return { ok: false, message: `The Authorization header is not \`Bearer KEY\`; ${HOW}` };
  const apiKey = headers.apiKey?.trim();
  if (bearer !== undefined && apiKey !== undefined && apiKey !== '' && bearer !== apiKey) {
    return { ok: false, message: 'The request carries two different keys (Authorization and x-api-key); send one' };
  }
  const key = bearer ?? apiKey;
  if (key === undefined || key === '') return { ok: false, message: `This gateway needs a client key; ${HOW}. Create one with \`kiwi keys create NAME\`` };
  if (key.length > MAX_HEADER) return { ok: false, message: 'The API key is too long to be a Kiwi key' };
  return { ok: true, key };
}
