import type { ClientAuth } from '../../clients/client-auth.js';
import { isLoopbackHost } from '../../clients/loopback.js';
import type { GatewayConfig } from '../gateway-config.js';
import { shownUrl, type UnavailableUpstream } from '../upstreams.js';
import { IN_PROCESS } from '../../resolver/local-model-fallback.js';
import type { ResolverRuntime } from '../../resolver/resolver-runtime.js';

/** The parts of `kiwi serve`'s banner that describe the configuration: for people, never a key. */

/** Where it listens, one line per upstream (name, kind, base URL, models) and the warnings: never a key, nor the variable it came from. */
export function describeGatewayConfig(config: GatewayConfig, url: string): string {
  const lines = [`gateway: ${url} (config ${config.fromFile ? config.file : `${config.file}, not found: defaults`})`, 'upstreams, first match wins:'];
  for (const u of config.upstreams) {
    lines.push(`  ${u.name} (${u.kind}) ${u.baseUrl === undefined ? 'offline' : shownUrl(u.baseUrl)}: ${u.models.join(', ')}`);
  }
  for (const w of config.warnings) lines.push(`warning: ${w}`);
  return lines.join('\n');
}

/** The line `kiwi serve` prints when the start check finds an upstream down (upstreams.check). */
export function describeUnavailable(down: UnavailableUpstream, models: readonly string[]): string {
  return `warning: upstream ${down.name} (${down.url}) is unavailable: ${down.error}; chats for ${models.join(', ')} fail until it answers, and GET /v1/models names it under unavailable_upstreams`;
}

/** The banner's access line: who may call, and a warning when network clients would be turned away by Host. */
export function describeAccess(access: Awaited<ReturnType<ClientAuth['mode']>>, allowedHosts: readonly string[], host: string): string {
  const lines = [
    access.mode === 'open'
      ? 'access: open to this machine (loopback, no client keys); `kiwi keys create NAME` makes every request need a key'
      : access.mode === 'keys'
        ? `access: client keys required (${access.activeKeys} active, ${access.clients} clients; \`kiwi keys list\`)`
        : 'access: CLOSED: no usable client key (all revoked, or the key store cannot be read), so every request is refused; `kiwi keys create NAME`',
    `answers to Host: ${allowedHosts.join(', ')}; browser origins are refused unless listed (allowed_origins)`,
  ];
  const onlyLocal = allowedHosts.every((h) => isLoopbackHost(h.replace(/:\d+$/, '')));
  if (!isLoopbackHost(host) && onlyLocal) lines.push(`warning: listening on ${host}, but allowed_hosts names only this machine, so clients on the network get 403; add the name or address they use to allowed_hosts in .ai/config/gateway.yaml`);
  return lines.join('\n');
}

/** The model a chat asks where the rules stop, as the plain-words line names it; undefined with `fallback: off`. */
export function describeFallbackModel(runtime: Pick<ResolverRuntime, 'fallback' | 'requestFallback'>): string | undefined {
  const f = runtime.fallback;
  if (f !== undefined) return f.upstream === IN_PROCESS ? `the model file ${f.model}, run in this process on the CPU (node-llama-cpp),` : `the model ${f.model}`;
  return runtime.requestFallback ? "the request's own model" : undefined;
}
