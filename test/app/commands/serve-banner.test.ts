import { describe, expect, it } from 'vitest';
import { describeFallbackModel, describeUnavailable } from '../../../src/app/commands/serve-banner.js';
import { IN_PROCESS } from '../../../src/resolver/local-model-fallback.js';
import type { ResolverFallback } from '../../../src/resolver/model-fallback.js';

const fallback = (model: string, upstream: string): ResolverFallback => ({ model, upstream, candidates: 5, ask: () => Promise.reject(new Error('not asked here')) });

describe("kiwi serve's plain-words line names the fallback model", () => {
  it('a model file run in the gateway, a routed model, the request\'s own, or none', () => {
    expect(describeFallbackModel({ fallback: fallback('qwen3-0.6b-q8_0.gguf', IN_PROCESS) })).toBe('the model file qwen3-0.6b-q8_0.gguf, run in this process on the CPU (node-llama-cpp),');
    expect(describeFallbackModel({ fallback: fallback('qwen3:0.6b', 'local') })).toBe('the model qwen3:0.6b');
    expect(describeFallbackModel({ requestFallback: { candidates: 5, timeoutMs: 10_000 } })).toBe("the request's own model");
    expect(describeFallbackModel({})).toBeUndefined();
  });
});

describe("kiwi serve's line for an upstream that is down at start", () => {
  it('names the upstream, its URL, why, and the models that fail', () => {
    const line = describeUnavailable({ name: 'local', url: 'http://127.0.0.1:11434/v1', error: 'HTTP 401: the API key was refused; check the key in LOCAL_KEY' }, ['llama*', 'qwen2.5:0.5b']);
    expect(line).toBe('warning: upstream local (http://127.0.0.1:11434/v1) is unavailable: HTTP 401: the API key was refused; check the key in LOCAL_KEY; chats for llama*, qwen2.5:0.5b fail until it answers, and GET /v1/models names it under unavailable_upstreams');
  });
});
