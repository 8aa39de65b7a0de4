import { z } from 'zod';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { DEFAULT_ANTHROPIC_VERSION } from '../llm/anthropic-provider.js';
import { endpointUrl } from '../llm/provider-options.js';
import type { HttpClient } from '../primitives/http-client.js';
import type { SharedCache } from '../contracts/shared-cache.js';
import type { UpstreamConfig } from './upstream-config.js';

/**
 * Each upstream's own model list (`GET {base}/models` for OpenAI-compatible servers, Anthropic's
 * `GET /v1/models`), so that `GET /v1/models` shows what a model picker can really ask for. A
 * list is cached per upstream (and, with Redis, shared by the replicas: keyed by the upstream's
 * URL, never its key); concurrent askers share one request; a failure is logged and counts as an
 * empty list (the configured ids are still listed) until a shorter retry time, and says why, so that
 * `GET /v1/models` and `kiwi serve`'s start can name the upstream that is down.
 */

export interface UpstreamModelsDeps {
  http: HttpClient;
  /** Told why an upstream's list could not be read. */
  log?: (line: string) => void;
  now?: () => number;
  /** Lists the other replicas read (Redis), so that N replicas ask each upstream once, not N times. */
  shared?: SharedCache;
}

export interface UpstreamModelsOptions {
  /** How long a list read is reused; default 60 s. */
  ttlMs?: number;
  /** How long a failure stands before the upstream is asked again; default 5 s. */
  failureTtlMs?: number;
  /** The whole request, connect to last byte; default 5 s. */
  timeoutMs?: number;
  /** Default 4 MiB (OpenRouter's list, with descriptions, is about 1 MiB). */
  maxResponseBytes?: number;
  /** Ids kept per upstream; default 1000. */
  maxModels?: number;
}

/** What one upstream's list gave: its ids, or why it could not be read (then `ids` is []). */
export interface UpstreamList {
  ids: string[];
  /** Why the list could not be read: refused, timed out, an HTTP status (401/403: the key); absent when it was read. */
  down?: string;
}

export interface UpstreamModels {
  /** The ids the upstream reports, in its order; no ids for a demo upstream, once closed, or when it could not be read (`down` says why). */
  list(upstream: UpstreamConfig): Promise<UpstreamList>;
  /** Aborts the requests in flight; later lists are empty. */
  close(): void;
}

/** How long a list read is reused. */
export const DEFAULT_LIST_TTL_MS = 60_000;
const DEFAULTS = { ttlMs: DEFAULT_LIST_TTL_MS, failureTtlMs: 5_000, timeoutMs: 5_000, maxResponseBytes: 4 * 1024 * 1024, maxModels: 1000 };
// The model ids the config accepts: an id a client could not send is no use in a picker.
const MODEL_ID = /^[\x21-\x7e]{1,200}$/;
// Loose: OpenAI, Anthropic, Ollama, vLLM and llama.cpp each add fields of their own.
const listSchema = z.looseObject({ data: z.array(z.looseObject({ id: z.unknown() })) });

export function createUpstreamModels(deps: UpstreamModelsDeps, options: UpstreamModelsOptions = {}): UpstreamModels {
  const o = { ...DEFAULTS, ...options };
  for (const [name, v] of Object.entries(o)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new KiwiError('INVALID_INPUT', `createUpstreamModels: ${name} must be a positive integer, got ${String(v)}`);
  }
  const now = deps.now ?? Date.now;
  // One slot per upstream name (bounded by the config); a slot in flight never expires.
  const slots = new Map<string, { expires: number; list: Promise<UpstreamList> }>();
  const inFlight = new Set<AbortController>();
  let closed = false;

  /** A list another replica read (a failure is not shared: each replica says its own). */
  async function sharedIds(u: UpstreamConfig): Promise<string[]> {
    const key = `models:${listRequest(u).url.href}`;
    const cached = await deps.shared?.get(key).catch(() => undefined);
    if (cached !== undefined) {
      try {
        const ids = JSON.parse(cached) as unknown;
        if (Array.isArray(ids) && ids.every((id) => typeof id === 'string' && MODEL_ID.test(id))) return ids.slice(0, o.maxModels);
      } catch {
        // not one of ours: read it afresh
      }
    }
    const ids = await fetchIds(u);
    await deps.shared?.set(key, JSON.stringify(ids), o.ttlMs).catch(() => undefined);
    return ids;
  }

  async function fetchIds(u: UpstreamConfig): Promise<string[]> {
    const { url, headers } = listRequest(u);
    const controller = new AbortController();
    inFlight.add(controller);
    // Per-phase timeouts would let a server that drips bytes hold the request: bound all of it.
    const timer = setTimeout(() => controller.abort(new KiwiError('HTTP_TIMEOUT', `no complete answer within ${o.timeoutMs} ms`)), o.timeoutMs);
    try {
      const res = await deps.http.request({ method: 'GET', url: url.href, headers, maxResponseBytes: o.maxResponseBytes, maxRedirects: 0, signal: controller.signal }).catch((error: unknown) => {
        throw isKiwiError(error, 'OUTPUT_TOO_LARGE') ? new KiwiError('OUTPUT_TOO_LARGE', `the list is larger than ${o.maxResponseBytes} bytes`) : error;
      });
      if (res.status === 401 || res.status === 403) throw new KiwiError('UPSTREAM_HTTP', `HTTP ${res.status}: the API key was refused; check ${u.apiKeyEnv === undefined ? "the upstream's api_key_env" : `the key in ${u.apiKeyEnv}`}`);
      if (res.status < 200 || res.status > 299) throw new KiwiError('UPSTREAM_HTTP', `HTTP ${res.status}`);
      let json: unknown;
      try {
        json = JSON.parse(res.body);
      } catch {
        throw new KiwiError('UPSTREAM_HTTP', 'the answer is not JSON');
      }
      const parsed = listSchema.safeParse(json);
      if (!parsed.success) throw new KiwiError('UPSTREAM_HTTP', 'the answer has no "data" list of models');
      const ids = parsed.data.data.map((m) => m.id).filter((id): id is string => typeof id === 'string' && MODEL_ID.test(id));
      return [...new Set(ids)].slice(0, o.maxModels);
    } finally {
      clearTimeout(timer);
      inFlight.delete(controller);
    }
  }

  function list(u: UpstreamConfig): Promise<UpstreamList> {
    if (u.kind === 'demo' || closed) return Promise.resolve({ ids: [] });
    const slot = slots.get(u.name);
    if (slot !== undefined && now() < slot.expires) return slot.list;
    const settle = (found: UpstreamList, ttl: number): UpstreamList => {
      slots.set(u.name, { expires: now() + ttl, list: Promise.resolve(found) });
      return found;
    };
    const found = sharedIds(u).then(
      (ids) => settle({ ids }, o.ttlMs),
      (error: unknown) => {
        // Closing aborts the requests in flight: that is no news about the upstream.
        if (closed) return { ids: [] };
        const down = (error as Error).message;
        const where = listRequest(u).url;
        deps.log?.(`upstream "${u.name}" (${where.origin}${where.pathname}) did not give its model list (${down}); GET /v1/models lists its configured models only and names it as unavailable, asking again in ${Math.round(o.failureTtlMs / 1000)} s`);
        return settle({ ids: [], down }, o.failureTtlMs);
      },
    );
    slots.set(u.name, { expires: Infinity, list: found });
    return found;
  }

  function close(): void {
    closed = true;
    for (const controller of inFlight) controller.abort(new KiwiError('INTERNAL', 'the gateway is shutting down'));
  }

  return { list, close };
}

/** No redirects are followed (maxRedirects 0): the key header must not travel to wherever a Location points. */
function listRequest(u: UpstreamConfig): { url: URL; headers: Record<string, string> } {
  const key = u.apiKey?.reveal();
  const who = `upstream "${u.name}"`;
  if (u.kind === 'anthropic') {
    const base = (u.baseUrl ?? '').replace(/\/+$/, '');
    const url = endpointUrl(base, /\/v1$/.test(base.replace(/[?#].*$/, '')) ? '/models' : '/v1/models', who);
    url.searchParams.set('limit', '1000');
    return { url, headers: { accept: 'application/json', 'anthropic-version': DEFAULT_ANTHROPIC_VERSION, ...(key === undefined ? {} : { 'x-api-key': key }) } };
  }
  return { url: endpointUrl(u.baseUrl ?? '', '/models', who), headers: { accept: 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) } };
}
