import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { gatewayMetricFamilies, type GatewayMetrics } from '../../src/app/gateway-metrics.js';
import { createCounters } from '../../src/prefetch/counters.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { useKernelServer } from '../fixtures/kernel/kernel-server.js';
import { tempPolicyFile } from '../fixtures/kernel/policy-file.js';

/**
 * GET /metrics (V0-API.md §16) on both backends: after a known run of calls over HTTP, the
 * Prometheus text read line by line has the kernel's metrics with the right labels and values,
 * and the gateway's counters as `kiwi_*`; a caller that does not ask for text (a plain fetch,
 * `kiwi stats`) still gets the JSON counters.
 */

const policyFile = tempPolicyFile(
  'metrics',
  [
    'rules:',
    '  - { id: no-shell, priority: 1, when: { tool_id: shell }, then: { decision: deny, reason: no shell } }',
    '  - { id: once, priority: 2, when: { tool_id: limited }, then: { decision: allow }, rate_limit: { max: 1, window: 1m } }',
    '  - { id: all, priority: 3, then: { decision: allow } }',
    '',
  ].join('\n'),
);

let clock = Date.parse('2026-11-23T10:00:00.000Z');
const now = (): Date => new Date(clock);
/** What Prometheus 2.x/3.x sends when it scrapes. */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

interface Scrape {
  /** `name{k="v",…}` (labels sorted) → value. */
  samples: Map<string, number>;
  /** Family name → type, from `# TYPE`. */
  types: Map<string, string>;
  helps: Set<string>;
}

/** The exposition format read as a scraper reads it, refusing any line it would not parse. */
function parseScrape(text: string): Scrape {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  const helps = new Set<string>();
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    const help = /^# HELP ([a-zA-Z_:][\w:]*) .+$/.exec(line);
    if (help) {
      helps.add(help[1] as string);
      continue;
    }
    const type = /^# TYPE ([a-zA-Z_:][\w:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{((?:[a-zA-Z_]\w*="(?:[^"\\\n]|\\["\\n])*",?)*)\})? (\S+)$/.exec(line);
    expect(sample, `a line Prometheus would not parse: ${line}`).not.toBeNull();
    const [, name, labelText = '', value] = sample as RegExpExecArray;
    const labels = [...labelText.matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}="${v}"`).sort();
    samples.set(`${name}${labels.length === 0 ? '' : `{${labels.join(',')}}`}`, value === '+Inf' ? Infinity : Number(value));
  }
  return { samples, types, helps };
}

describe.each(kernelBackends({ policyFile, now, reaperIntervalMs: 0, queueIntervalMs: 0 }))('on %s', (_backend, open) => {
  const counters = createCounters();
  const gateway = (): GatewayMetrics => ({ uptime_s: 42, prefetch: counters.snapshot(), resolution: { resolved: 5, asked_back: 2, unresolved: 1 }, fallback: { asked: { called: 3, refused: 1, declined: 0, failed: 2 }, seconds: 1.5, inputTokens: 900, outputTokens: 60, usd: 0 }, transitions: { tools: 3, pairs: 2, observations: 9 } });
  const server = useKernelServer(open, { gatewayMetrics: { metrics: gateway, metricFamilies: () => gatewayMetricFamilies(gateway()) } });

  const post = async (p: string, body: unknown): Promise<Record<string, unknown>> => {
    const answer = await server.post(p, body);
    expect(answer.status, p).toBeLessThan(300);
    return answer.body;
  };
  const scrape = async (accept = PROMETHEUS_ACCEPT): Promise<Scrape> => {
    const res = await fetch(`${server.url}/metrics`, { headers: { accept } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parseScrape(await res.text());
  };

  it('counts executions, intents, policy time and step time after a known run, and the executions not ended', async () => {
    const agent = 'metered';
    const stream = await server.connectAgent(agent);
    const first = (await post('/v0/executions', { agent_id: agent }))['id'] as string;
    const second = (await post('/v0/executions', { agent_id: agent }))['id'] as string;
    const sessions = new Map<string, string>();
    for (let i = 0; i < 2; i++) {
      const assigned = (await stream.next('execution.assigned')).data as { execution_id: string; session_id: string };
      sessions.set(assigned.execution_id, assigned.session_id);
    }
    await post(`/v0/executions/${first}/cancel`, {});
    const intent = (body: unknown) => post('/v0/agents/intent', { execution_id: second, session_id: sessions.get(second), intent: body });
    expect(await intent({ type: 'invoke_tool', tool_id: 'shell', arguments: { command: 'ls' } })).toMatchObject({ accepted: false });
    const step = (await intent({ type: 'invoke_tool', tool_id: 'echo', arguments: { text: 'hi' } }))['step_id'] as string;

    const middle = await scrape();
    expect(middle.samples.get('rebuno_active_executions')).toBe(1);
    expect(middle.samples.get('rebuno_executions_total{status="cancelled"}')).toBe(1);

    clock += 1500;
    await post('/v0/agents/step-result', { execution_id: second, session_id: sessions.get(second), step_id: step, success: true, data: 'hi' });
    const limited = (await intent({ type: 'invoke_tool', tool_id: 'limited' }))['step_id'] as string;
    expect(await intent({ type: 'invoke_tool', tool_id: 'limited' })).toMatchObject({ accepted: false, error: expect.stringMatching(/^rate limit exceeded/) });
    await post('/v0/agents/step-result', { execution_id: second, session_id: sessions.get(second), step_id: limited, success: false, error: 'no' });
    expect(await intent({ type: 'complete', output: { done: true } })).toEqual({ accepted: true });

    const { samples, types, helps } = await scrape();
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('rebuno_')))).toEqual({
      rebuno_executions_total: 'counter',
      rebuno_intents_total: 'counter',
      rebuno_step_duration_seconds: 'histogram',
      rebuno_policy_eval_seconds: 'histogram',
      rebuno_active_executions: 'gauge',
    });
    for (const name of types.keys()) expect(helps.has(name), name).toBe(true);
    const rebuno = (prefix: string) => Object.fromEntries([...samples].filter(([k]) => k.startsWith(prefix)));
    expect(rebuno('rebuno_executions_total')).toEqual({
      'rebuno_executions_total{status="pending"}': 2,
      'rebuno_executions_total{status="running"}': 2,
      'rebuno_executions_total{status="blocked"}': 0,
      'rebuno_executions_total{status="completed"}': 1,
      'rebuno_executions_total{status="failed"}': 0,
      'rebuno_executions_total{status="cancelled"}': 1,
    });
    expect(rebuno('rebuno_intents_total')).toEqual({
      'rebuno_intents_total{decision="accepted",type="invoke_tool"}': 2,
      'rebuno_intents_total{decision="denied",type="invoke_tool"}': 1,
      'rebuno_intents_total{decision="rate_limited",type="invoke_tool"}': 1,
      'rebuno_intents_total{decision="pending_approval",type="invoke_tool"}': 0,
      'rebuno_intents_total{decision="accepted",type="complete"}': 1,
      'rebuno_intents_total{decision="accepted",type="fail"}': 0,
      'rebuno_intents_total{decision="accepted",type="wait"}': 0,
    });
    expect(samples.get('rebuno_active_executions')).toBe(0);
    // Every invoke_tool was weighed by the policy, the rate-limited one included.
    expect(samples.get('rebuno_policy_eval_seconds_count{action="tool.invoke"}')).toBe(4);
    expect(samples.get('rebuno_policy_eval_seconds_bucket{action="tool.invoke",le="+Inf"}')).toBe(4);
    // The clock moved 1.5 s between echo's step and its result; limited's came at once.
    expect(rebuno('rebuno_step_duration_seconds_count')).toEqual({ 'rebuno_step_duration_seconds_count{tool_id="echo"}': 1, 'rebuno_step_duration_seconds_count{tool_id="limited"}': 1 });
    expect(samples.get('rebuno_step_duration_seconds_sum{tool_id="echo"}')).toBe(1.5);
    expect(samples.get('rebuno_step_duration_seconds_bucket{le="1",tool_id="echo"}')).toBe(0);
    expect(samples.get('rebuno_step_duration_seconds_bucket{le="2.5",tool_id="echo"}')).toBe(1);
    expect(samples.get('rebuno_step_duration_seconds_bucket{le="+Inf",tool_id="echo"}')).toBe(1);
    expect(samples.get('rebuno_step_duration_seconds_bucket{le="0.005",tool_id="limited"}')).toBe(1);
    expect(samples.get('rebuno_step_duration_seconds_sum{tool_id="limited"}')).toBe(0);
  });

  it("serves the gateway's counters as kiwi_* in the text, times in seconds", async () => {
    counters.hits += 3;
    counters.misses += 1;
    counters.savedMs += 2500;
    const { samples, types } = await scrape('text/plain');
    expect(samples.get('kiwi_prefetch_hits_total')).toBe(3);
    expect(samples.get('kiwi_prefetch_misses_total')).toBe(1);
    expect(samples.get('kiwi_prefetch_saved_seconds_total')).toBe(2.5);
    expect(samples.get('kiwi_uptime_seconds')).toBe(42);
    expect(samples.get('kiwi_intents_total{decision="resolved"}')).toBe(5);
    expect(samples.get('kiwi_intents_total{decision="asked_back"}')).toBe(2);
    expect(types.get('kiwi_intents_total')).toBe('counter');
    expect(samples.get('kiwi_resolver_fallback_total{outcome="called"}')).toBe(3);
    expect(samples.get('kiwi_resolver_fallback_total{outcome="failed"}')).toBe(2);
    expect(samples.get('kiwi_resolver_fallback_seconds_total')).toBe(1.5);
    expect(samples.get('kiwi_resolver_fallback_tokens_total{direction="input"}')).toBe(900);
    expect(samples.get('kiwi_transitions_observations')).toBe(9);
    expect(types.get('kiwi_prefetch_hits_total')).toBe('counter');
    expect(types.get('kiwi_uptime_seconds')).toBe('gauge');
    // One family per prefetch counter the JSON has.
    expect([...types.keys()].filter((n) => n.startsWith('kiwi_prefetch_')).length).toBe(Object.keys(counters.snapshot()).length);
  });

  it('still serves JSON to a plain fetch, to JSON before text, and to kiwi stats', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/plain;q=0.5', 'text/html,application/xhtml+xml,*/*;q=0.8']) {
      const res = await fetch(`${server.url}/metrics`, accept === undefined ? {} : { headers: { accept } });
      expect(res.headers.get('content-type'), accept).toMatch(/^application\/json/);
      expect(res.headers.get('vary')).toMatch(/accept/i);
      expect(((await res.json()) as GatewayMetrics).prefetch.hits, accept).toBe(counters.hits);
    }
    const out: string[] = [];
    const code = await runCli(['stats', '--url', server.url], { env: {}, cwd: path.dirname(policyFile), io: { out: (l) => out.push(l), err: (l) => out.push(l) } });
    expect(out.join('\n')).toMatch(/hit rate\s+75\.0%/);
    expect(code).toBe(0);
  });
});
