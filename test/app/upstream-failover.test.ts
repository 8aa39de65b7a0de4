import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../src/app/gateway-config.js';
import { createUpstreams, watchUpstreams, type Upstreams } from '../../src/app/upstreams.js';
import type { FailoverEvent } from '../../src/llm/failover-provider.js';
import type { ChatRequest } from '../../src/llm/types.js';
import { drain, streamFailure, textOf } from '../llm/collect-events.js';
import { failure } from '../helpers/expect-failure.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';

/**
 * Failover between upstreams with the real OpenAI provider against two local replay servers (the
 * one stand-in: a paid LLM API cannot run here): the first answers 5xx or 429, refuses the
 * connection (its server closed), or fails in ways that must not fail over.
 */

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-failover-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
async function load(text: string, env: Record<string, string> = {}) {
  const file = path.join(root, `gateway-${++counter}.yaml`);
  writeFileSync(file, text);
  return loadGatewayConfig(file, { env, root });
}

const ask = (model: string): ChatRequest => ({ model, messages: [{ role: 'user', content: 'What is the capital of France?' }] });

describe('upstream failover', () => {
  let first: ReplayLlmServer;
  let second: ReplayLlmServer;
  let upstreams: Upstreams | undefined;
  let clock = 1_000_000;
  const events: FailoverEvent[] = [];

  async function open(extra = ''): Promise<Upstreams> {
    const config = await load(`upstreams:
  - { name: main, kind: openai, base_url: "${first.url}/v1", models: ["gpt-*"], fallbacks: [backup, other] }
  - { name: backup, kind: openai, base_url: "${second.url}/v1", models: ["gpt-*"] }
  - { name: other, kind: openai, base_url: "${second.url}/v1", models: ["llama*"] }
${extra}`);
    upstreams = createUpstreams(config, { now: () => clock, coolDownMs: 30_000, onFailover: (e) => events.push(e) });
    return upstreams;
  }

  beforeEach(async () => {
    [first, second] = await Promise.all([startReplayLlmServer(), startReplayLlmServer()]);
    second.reply('openai-plain');
    events.length = 0;
  });
  afterEach(async () => {
    await upstreams?.close();
    upstreams = undefined;
    await Promise.all([first.close(), second.close()]);
  });

  it('serves from the fallback when the first answers 503 before its first byte, and says so', async () => {
    first.reply({ status: 503 });
    const u = await open();
    const route = u.route('gpt-4o-mini');
    expect(route.upstream).toBe('main');
    const { events: got, error } = await drain(route.provider.stream(ask(route.model)));
    expect(error).toBeUndefined();
    expect(textOf(got)).toBe('The capital of France is Paris.');
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
    expect(events).toEqual([{ model: 'gpt-4o-mini', from: 'main', to: 'backup', why: expect.stringMatching(/503/) }]);
    expect(u.health().map((s) => [s.name, s.state])).toEqual([['demo', 'unknown'], ['main', 'down'], ['backup', 'up'], ['other', 'unknown']]);
  });

  it('fails over when the first upstream is gone (connection refused), and passes it over while it is down', async () => {
    const u = await open();
    await first.close();
    const route = u.route('gpt-4o');
    expect(textOf((await drain(route.provider.stream(ask(route.model)))).events)).toBe('The capital of France is Paris.');
    expect(events).toEqual([expect.objectContaining({ from: 'main', to: 'backup', why: expect.stringMatching(/refused/) })]);
    // Passed over: the next request goes straight to the fallback, with no second failover.
    expect(textOf((await drain(route.provider.stream(ask(route.model)))).events)).toBe('The capital of France is Paris.');
    expect(events).toHaveLength(1);
    expect(second.requests).toHaveLength(2);
  });

  it('tries a down upstream again once its cool-down is over, and counts it up when it answers', async () => {
    first.reply('openai-plain');
    first.replyOnce({ status: 503 });
    const u = await open();
    const route = u.route('gpt-4o');
    const chat = async (): Promise<string> => textOf((await drain(route.provider.stream(ask(route.model)))).events);
    expect(await chat()).toBe('The capital of France is Paris.');
    clock += 29_999;
    expect(await chat()).toBe('The capital of France is Paris.');
    expect([first.requests.length, second.requests.length]).toEqual([1, 2]);
    clock += 1;
    expect(await chat()).toBe('The capital of France is Paris.');
    expect([first.requests.length, second.requests.length]).toEqual([2, 2]);
    expect(u.health().find((s) => s.name === 'main')).toMatchObject({ state: 'up', since: clock });
  });

  it('fails over a completion (not streamed) on 429 too', async () => {
    first.reply({ status: 429 });
    second.reply('openai-complete');
    const u = await open();
    const route = u.route('gpt-4o-mini');
    const answer = await route.provider.complete(ask(route.model));
    expect(answer.text.length).toBeGreaterThan(0);
    expect(events).toEqual([expect.objectContaining({ from: 'main', to: 'backup' })]);
  });

  it('never fails over what another upstream would refuse too (401), nor a stream that already began', async () => {
    first.reply('openai-401');
    const u = await open();
    const route = u.route('gpt-4o-mini');
    await streamFailure(route.provider.stream(ask(route.model)), 'UPSTREAM_HTTP');
    first.reply({ recording: 'openai-plain', resetAfterChunks: 2 });
    const { events: got, error } = await drain(route.provider.stream(ask(route.model)));
    expect(got.length).toBeGreaterThan(0);
    expect(error).toBeDefined();
    expect(second.requests).toHaveLength(0);
    expect(events).toEqual([]);
  });

  it('leaves out a fallback that does not serve the model, and tells the last failure when every upstream is down', async () => {
    first.reply({ status: 500 });
    second.reply({ status: 502 });
    const u = await open();
    const route = u.route('gpt-4o-mini');
    const { error } = await streamFailure(route.provider.stream(ask(route.model)), 'UPSTREAM_HTTP');
    expect(error.message).toMatch(/502/);
    // "other" serves llama* only: main → backup, never other.
    expect(events.map((e) => e.to)).toEqual(['backup']);
    expect(second.requests.map((r) => (r.body as { model: string }).model)).toEqual(['gpt-4o-mini']);
  });

  it('does not fail over a request the client cancelled', async () => {
    first.reply({ recording: 'openai-plain', stallAfterChunks: 0 });
    const u = await open();
    const route = u.route('gpt-4o-mini');
    const stop = new AbortController();
    const reading = drain(route.provider.stream(ask(route.model), stop.signal));
    await first.request(0);
    stop.abort();
    await failure(reading.then((r) => Promise.reject(r.error)), 'TOOL_CANCELLED');
    expect(second.requests).toHaveLength(0);
    expect(events).toEqual([]);
  });

  it('checks the upstreams on a beat and tells each change once, whoever found it: down, then up again', async () => {
    first.models(['gpt-4o']);
    second.models(['gpt-4o']);
    first.reply('openai-plain');
    first.replyOnce({ status: 503 });
    const u = await open();
    const told: string[] = [];
    let beats = 0;
    const waiters: { until: () => boolean; resolve: () => void }[] = [];
    const wake = (): void => {
      for (const w of waiters.splice(0)) {
        if (w.until()) w.resolve();
        else waiters.push(w);
      }
    };
    const when = (until: () => boolean): Promise<void> => new Promise((resolve) => (waiters.push({ until, resolve }), wake()));
    // The real upstreams, counted: each beat of the watcher is one check.
    const counted = { check: async () => (await u.check(), beats++, wake(), []), health: () => u.health() };
    const stop = watchUpstreams(counted, 5, (line) => told.push(line));
    try {
      const route = u.route('gpt-4o');
      await drain(route.provider.stream(ask(route.model))); // 503: main is down, found by a request
      const afterDown = beats;
      await when(() => beats >= afterDown + 3);
      expect(told).toEqual(['upstream "main" is down: ' + u.health().find((st) => st.name === 'main')?.error]);
      clock += 30_000;
      await drain(route.provider.stream(ask(route.model))); // tried again after the cool-down, and answers
      const afterUp = beats;
      await when(() => beats >= afterUp + 2);
      expect(told).toEqual([expect.stringMatching(/^upstream "main" is down: .*503/), 'upstream "main" answers again']);
    } finally {
      stop();
    }
  });

  it('counts an upstream up again when a check reads its list a cache lifetime after it was found down', async () => {
    first.models({ status: 503, body: 'overloaded' });
    const u = await open();
    await u.check();
    expect(u.health().find((s) => s.name === 'main')).toMatchObject({ state: 'down', error: expect.stringMatching(/503/) });
    first.models(['gpt-4o']);
    clock += 30_000; // the failure is read again (past its 5 s), but a success this soon may be a cached one: still down
    await u.check();
    expect(u.health().find((s) => s.name === 'main')?.state).toBe('down');
    clock += 30_000;
    await u.check();
    expect(u.health().find((s) => s.name === 'main')?.state).toBe('up');
  });

  it('refuses fallbacks that name no upstream, the upstream itself or the demo model, saying which', async () => {
    const at = (text: string) => load(`upstreams:\n  - { name: main, kind: openai, base_url: "http://127.0.0.1:1/v1", models: ["gpt-*"], fallbacks: [${text}] }\n`);
    await expect(at('nope')).rejects.toThrow(/upstreams\[0\]\.fallbacks\[0\].*no upstream is named "nope" \(upstreams: demo, main\)/s);
    await expect(at('main')).rejects.toThrow(/is this upstream itself/);
    await expect(at('demo')).rejects.toThrow(/offline demo model.*cannot stand in/);
  });

  it('does not warn that a fallback never gets its models: it gets them when its upstream is down', async () => {
    const config = await load(`upstreams:
  - { name: main, kind: openai, base_url: "http://127.0.0.1:1/v1", models: ["gpt-*"], fallbacks: [backup] }
  - { name: backup, kind: openai, base_url: "http://127.0.0.1:2/v1", models: ["gpt-*"] }
  - { name: shadowed, kind: openai, base_url: "http://127.0.0.1:3/v1", models: ["gpt-4o"] }
`);
    expect(config.warnings.filter((w) => w.includes('never gets'))).toEqual([expect.stringContaining('upstream "shadowed"')]);
  });
});
