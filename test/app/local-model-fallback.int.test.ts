import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IN_PROCESS } from '../../src/resolver/local-model-fallback.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { writeTinyGguf } from '../helpers/tiny-gguf.js';

/**
 * resolver.yaml's `fallback: { model_file }` through the gateway's own wiring: the file is checked
 * and loaded at start (node-llama-cpp, CPU; a tiny random model the test writes), the resolver asks
 * it, and the gateway frees it when it closes. A file that is not there stops the start.
 */

let served: DemoGateway;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-local-model-gw-',
    async prepare(root) {
      mkdirSync(path.join(root, 'models'));
      await writeTinyGguf(path.join(root, 'models', 'tiny.gguf'));
      writeFileSync(path.join(root, '.ai', 'config', 'resolver.yaml'), 'fallback: { model_file: models/tiny.gguf, candidates: 3, timeout_ms: 60000 }\n');
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

describe("the fallback model as a file the gateway runs", () => {
  it('is loaded at start from the path resolver.yaml gives, relative to the project, and answers the resolver', async () => {
    const { fallback } = served.gateway.runtime;
    expect(fallback).toMatchObject({ model: 'tiny.gguf', upstream: IN_PROCESS, candidates: 3 });
    const answer = await fallback?.ask({ intent: 'read the readme', tools: [...served.gateway.runtime.tools.values()].slice(0, 3) });
    expect(answer?.kind).not.toBe('failed');
  });

  it('stops the start with what to fix when the file is not there', async () => {
    await expect(
      serveDemoGateway({
        prefix: 'kiwi-local-model-missing-',
        prepare(root) {
          writeFileSync(path.join(root, '.ai', 'config', 'resolver.yaml'), 'fallback: { model_file: models/qwen3-0.6b.gguf }\n');
        },
      }),
    ).rejects.toThrow(/\.ai\/config\/resolver\.yaml: fallback\.model_file: .*models\/qwen3-0\.6b\.gguf does not exist; fetch a GGUF model there first/);
  });
});
