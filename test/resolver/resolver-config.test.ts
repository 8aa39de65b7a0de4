import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadResolverConfig } from '../../src/resolver/resolver-config.js';

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-resolver-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(text: string): string {
  const file = path.join(dir, `resolver-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

const ctx = { env: { EMBED_KEY: 'k1', LLM_URL: 'http://127.0.0.1:9' }, root: '/project' };

describe('resolver.yaml', () => {
  it('refuses a file past the size cap without reading it', async () => {
    const file = write(`# ${'x'.repeat(70 * 1024)}\n`);
    await expect(loadResolverConfig(file, ctx)).rejects.toThrow(/is \d+ bytes, larger than the 65536 allowed; it should be a few lines/);
  });

  it("defaults to USE-lite, rules-only arguments and the request's own model as fallback when the file is missing", async () => {
    expect(await loadResolverConfig(path.join(dir, 'absent.yaml'), ctx)).toEqual({ embedder: { kind: 'use-lite' }, settings: {}, argumentModel: null, fallback: { kind: 'request', candidates: 5, timeoutMs: 10_000 } });
    expect((await loadResolverConfig(write('threshold: 0.6\n'), ctx)).fallback).toEqual({ kind: 'request', candidates: 5, timeoutMs: 10_000 });
  });

  it('reads every backend and setting, with ${ENV} in URLs and keys and model folders relative to the project', async () => {
    const onnx = await loadResolverConfig(write('embedder: { kind: onnx, model_dir: models/mini }\nthreshold: 0.6\ntext_weight: 0.5\ntarget_precision: 0.8\nmodel: models/mine.json\n'), ctx);
    expect(onnx).toMatchObject({ embedder: { kind: 'onnx', modelDir: '/project/models/mini' }, settings: { threshold: 0.6, textWeight: 0.5, targetPrecision: 0.8 }, modelFile: '/project/models/mine.json' });
    expect((await loadResolverConfig(write('embedder: { kind: static }\n'), ctx)).embedder).toEqual({ kind: 'static' });
    expect((await loadResolverConfig(write('embedder: { kind: static, model_dir: models/my-static }\n'), ctx)).embedder).toEqual({ kind: 'static', modelDir: '/project/models/my-static' });
    const http = await loadResolverConfig(
      write('embedder: { kind: http, url: "http://127.0.0.1:8080", model: e5, api_key: "${EMBED_KEY}" }\narguments: { kind: llm, url: "${LLM_URL}", model: qwen }\n'),
      ctx,
    );
    expect(http).toMatchObject({ embedder: { kind: 'http', url: 'http://127.0.0.1:8080', model: 'e5', apiKey: 'k1' }, argumentModel: { url: 'http://127.0.0.1:9', model: 'qwen' } });
  });

  it("reads the fallback model by model or by tier, the request's own with limits, or off", async () => {
    expect((await loadResolverConfig(write('fallback: { model: "qwen3:0.6b" }\n'), ctx)).fallback).toEqual({ kind: 'named', named: { model: 'qwen3:0.6b', candidates: 5, timeoutMs: 10_000 } });
    expect((await loadResolverConfig(write('fallback: { tier: fast, candidates: 3, timeout_ms: 2000 }\n'), ctx)).fallback).toEqual({ kind: 'named', named: { tier: 'fast', candidates: 3, timeoutMs: 2000 } });
    expect((await loadResolverConfig(write('fallback: { candidates: 8 }\n'), ctx)).fallback).toEqual({ kind: 'request', candidates: 8, timeoutMs: 10_000 });
    expect((await loadResolverConfig(write('fallback: {}\n'), ctx)).fallback).toEqual({ kind: 'request', candidates: 5, timeoutMs: 10_000 });
    expect((await loadResolverConfig(write('fallback: off\n'), ctx)).fallback).toEqual({ kind: 'off' });
    expect((await loadResolverConfig(write('fallback: false\n'), ctx)).fallback).toEqual({ kind: 'off' });
  });

  it('reads a model file to run in the gateway, relative to the project', async () => {
    expect((await loadResolverConfig(write('fallback: { model_file: models/qwen3-0.6b.gguf, timeout_ms: 5000 }\n'), ctx)).fallback).toEqual({ kind: 'named', named: { modelFile: '/project/models/qwen3-0.6b.gguf', candidates: 5, timeoutMs: 5000 } });
  });

  it.each([
    ['fallback: { model: a, tier: fast }', /fallback: give one of model .*, tier .* or model_file .*, not two/],
    ['fallback: { tier: fast, model_file: m.gguf }', /fallback: give one of model/],
    ['fallback: { model_file: "" }', /fallback\.model_file/],
    ['fallback: on', /fallback/],
    ['fallback: { tier: "no spaces" }', /fallback\.tier: must be a tier name/],
    ['fallback: { model: m, candidates: 0 }', /fallback\.candidates/],
    ['fallback: { model: m, url: "http://x" }', /Unrecognized key|url/],
    ['embedder: { kind: word2vec }', /embedder/],
    ['embedder: { kind: static, model_dir: "" }', /embedder\.model_dir/],
    ['threshold: 2', /threshold/],
    ['target_precision: 1.5', /target_precision/],
    ['treshold: 0.5', /Unrecognized key|treshold/],
    ['threshold: 0.5\nembedder: [unclosed\n', /resolver-\w+\.yaml:2:11: invalid YAML: the "\[" opened at line 2, column 11 is not closed/],
    ['arguments: { kind: llm, url: "${NOPE}", model: m }', /NOPE is not set/],
  ])('refuses %s with a message that names the problem', async (text, message) => {
    await expect(loadResolverConfig(write(text), ctx)).rejects.toThrow(message);
  });
});
