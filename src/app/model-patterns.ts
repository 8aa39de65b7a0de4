import { isModelGlob, modelMatches } from '../base/model-glob.js';
import type { UpstreamConfig } from './upstream-config.js';

/** Upstream models an earlier upstream already serves: a warning each, saying what to change. */
export function shadowWarnings(upstreams: UpstreamConfig[], file: string): string[] {
  const out: string[] = [];
  upstreams.forEach((u, j) => {
    for (const p of u.models) {
      const before = upstreams.slice(0, j).find((e) => e.models.some((q) => q === '*' || q === p || (!isModelGlob(p) && modelMatches(q, p))));
      // A fallback serves its upstream's models on purpose, when that one is down.
      if (before === undefined || before.fallbacks?.includes(u.name)) continue;
      const fromEnv = [u, before].map((x) => /^environment variable (\w+)$/.exec(x.source)?.[1]).filter((v) => v !== undefined);
      const fix = fromEnv.length > 0 ? `list the upstreams you want in ${file}, or unset ${fromEnv.join(' or ')}` : `change the order or the models in ${file}`;
      out.push(`upstream "${u.name}" (${u.source}) never gets model "${p}": "${before.name}" comes first and serves it; ${fix}`);
    }
  });
  return out;
}
