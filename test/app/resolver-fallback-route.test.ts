import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadGatewayConfig, type GatewayConfig } from '../../src/app/gateway-config.js';
import { routeResolverFallback } from '../../src/app/resolver-fallback.js';
import { createUpstreams, type Upstreams } from '../../src/app/upstreams.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-fallback-route-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const GATEWAY = `
upstreams:
  - { name: cloud, kind: openai, base_url: "http://127.0.0.1:1/v1", models: ["gpt-*"] }
  - { name: local, kind: openai, base_url: "http://127.0.0.1:2/v1", models: ["qwen3:*"] }
model_tiers: { fast: "qwen3:0.6b", powerful: gpt-4o }
prices:
  "gpt-4o": { input_per_mtok: 2.5, output_per_mtok: 10 }
`;

let upstreams: Upstreams | undefined;
afterEach(async () => {
  await upstreams?.close();
  upstreams = undefined;
});

async function route(): Promise<ReturnType<typeof routeResolverFallback>> {
  const file = path.join(root, 'gateway.yaml');
  writeFileSync(file, GATEWAY);
  const config: GatewayConfig = await loadGatewayConfig(file, { env: {}, root });
  upstreams = createUpstreams(config);
  return routeResolverFallback({ config, upstreams });
}

describe("resolver.yaml's fallback, routed by gateway.yaml", () => {
  it('goes to the upstream that serves its model, by name or by tier', async () => {
    const routed = await route();
    expect(routed({ tier: 'fast', candidates: 5, timeoutMs: 1000 })).toMatchObject({ model: 'qwen3:0.6b', upstream: 'local', candidates: 5 });
    expect(routed({ model: 'gpt-4o', candidates: 3, timeoutMs: 1000 })).toMatchObject({ model: 'gpt-4o', upstream: 'cloud', candidates: 3 });
  });

  it('stops the gateway with what to fix when nothing serves it', async () => {
    const routed = await route();
    expect(() => routed({ tier: 'tiny', candidates: 5, timeoutMs: 1000 })).toThrow(/fallback\.tier: "tiny" is not in gateway\.yaml's model_tiers \(fast, powerful\); add it there, or give fallback\.model/);
    expect(() => routed({ model: 'llama3:8b', candidates: 5, timeoutMs: 1000 })).toThrow(/no upstream in gateway\.yaml serves the model "llama3:8b"; add it to an upstream's models/);
  });

  it('loads a model file itself, and stops the gateway with what to fix when it is missing or not GGUF', async () => {
    const routed = await route();
    await expect(routed({ modelFile: path.join(root, 'models', 'qwen3-0.6b.gguf'), candidates: 5, timeoutMs: 1000 })).rejects.toThrow(
      /^\.ai\/config\/resolver\.yaml: fallback\.model_file: .*models\/qwen3-0\.6b\.gguf does not exist; fetch a GGUF model there first/,
    );
    const html = path.join(root, 'page.gguf');
    writeFileSync(html, '<!doctype html>');
    await expect(routed({ modelFile: html, candidates: 5, timeoutMs: 1000 })).rejects.toThrow(/fallback\.model_file: .*page\.gguf is not a GGUF model/);
  });
});
