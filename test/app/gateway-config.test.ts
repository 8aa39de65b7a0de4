import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { describeGatewayConfig } from '../../src/app/commands/serve-banner.js';
import { loadGatewayConfig, type GatewayConfigContext } from '../../src/app/gateway-config.js';
import { modelMatches } from '../../src/base/model-glob.js';
import { DEFAULT_LOOP_LIMITS } from '../../src/loop/loop-limits.js';
import { failure } from '../helpers/expect-failure.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-gateway-config-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const SHIPPED = path.join(REPO_ROOT, '.ai', 'config', 'gateway.yaml');
const OPENAI_KEY = 'sk-test-c2VjcmV0LW9wZW5haS1rZXk';
const ANTHROPIC_KEY = 'sk-ant-test-c2VjcmV0LWFudGhyb3BpYw';

let counter = 0;
function configFile(text: string): string {
  const file = path.join(root, `gateway-${++counter}.yaml`);
  writeFileSync(file, text);
  return file;
}

const load = (file: string, env: GatewayConfigContext['env'] = {}) => loadGatewayConfig(file, { env, root });
const missing = path.join(root, 'nope', 'gateway.yaml');

/** The error message for a config text, with the file name replaced by FILE. */
async function refused(text: string, env: GatewayConfigContext['env'] = {}): Promise<string> {
  const file = configFile(text);
  const error = await failure(load(file, env), 'INVALID_INPUT');
  return error.message.replace(path.basename(file), 'FILE');
}

describe('gateway config: defaults', () => {
  it('without a file: 127.0.0.1:8787, only the demo model kiwi-demo, the default limits', async () => {
    const c = await load(missing);
    expect(c).toMatchObject({ fromFile: false, host: '127.0.0.1', port: 8787, maxBodyBytes: 8 * 1024 * 1024, allowedHosts: ['localhost', '127.0.0.1', '[::1]'], allowedOrigins: [], maxConcurrentPerClient: 64, mcp: { allowedOrigins: [] }, warnings: [] });
    expect(c.prefetch).toMatchObject({ minCosine: 1, embedder: 'static' });
    expect(c.limits).toEqual(DEFAULT_LOOP_LIMITS);
    expect(c.upstreams).toEqual([{ name: 'demo', kind: 'demo', models: ['kiwi-demo'], source: 'built-in' }]);
  });

  it('the shipped .ai/config/gateway.yaml holds exactly the defaults', async () => {
    const shipped = await loadGatewayConfig(SHIPPED, { env: {}, root: REPO_ROOT });
    const defaults = await load(missing);
    expect(shipped.fromFile).toBe(true);
    expect(shipped.file).toBe(path.join('.ai', 'config', 'gateway.yaml'));
    expect({ ...shipped, file: '', fromFile: false }).toEqual({ ...defaults, file: '', fromFile: false });
  });

  it('reads every field from the file', async () => {
    const file = configFile(`
host: 0.0.0.0
port: 9000
allowed_hosts: [gateway.internal, "10.0.0.5:9000", "[::1]"]
allowed_origins: ["https://tools.example.com"]
upstreams:
  - { name: llama, kind: openai, base_url: "http://127.0.0.1:8080/v1", models: ["llama-*"], timeout_ms: 300000 }
limits: { max_turns: 3, max_tool_calls: 4, max_duration_ms: 5000, max_result_chars: 600, max_repeats: 2, max_body_bytes: 2048, max_concurrent_requests_per_client: 5, body_timeout_ms: 5000, max_connections: 16, shutdown_grace_ms: 0 }
mcp: { allowed_origins: ["http://localhost:3000", "https://app.example.com/"] }
prefetch: { enabled: false, ttl_ms: 5000, speculate: false, concurrency: 3, min_cosine: 0.95, embedder: resolver }
`);
    const c = await load(file);
    expect(c.prefetch).toEqual({ enabled: false, ttlMs: 5000, speculate: false, concurrency: 3, minCosine: 0.95, embedder: 'resolver' });
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 9000,
      maxBodyBytes: 2048,
      allowedHosts: ['gateway.internal', '10.0.0.5:9000', '[::1]'],
      allowedOrigins: ['https://tools.example.com'],
      maxConcurrentPerClient: 5,
      listen: { bodyTimeoutMs: 5000, maxConnections: 16 },
      shutdownGraceMs: 0,
      mcp: { allowedOrigins: ['https://tools.example.com', 'http://localhost:3000', 'https://app.example.com'] },
    });
    expect(c.limits).toEqual({ maxTurns: 3, maxToolCalls: 4, maxDurationMs: 5000, maxResultChars: 600, maxRepeats: 2, maxTokens: 0 });
    expect(c.upstreams).toEqual([
      { name: 'demo', kind: 'demo', models: ['kiwi-demo'], source: 'built-in' },
      { name: 'llama', kind: 'openai', baseUrl: 'http://127.0.0.1:8080/v1', models: ['llama-*'], timeoutMs: 300000, source: `${path.basename(file)}:7` },
    ]);
  });

  it('expands ${VAR} and ${VAR:-default} in base_url, and reads keys from api_key_env', async () => {
    const file = configFile(`
upstreams:
  - { name: a, kind: openai, base_url: "\${LLAMA_URL:-http://127.0.0.1:8080/v1}", models: [a] }
  - { name: b, kind: openai, base_url: "http://\${B_HOST}/v1", api_key_env: B_KEY, models: [b] }
  - { name: c, kind: anthropic, api_key_env: C_KEY, models: [c] }
`);
    const c = await load(file, { B_HOST: '10.0.0.2:11434', B_KEY: ` ${OPENAI_KEY}\n`, C_KEY: ANTHROPIC_KEY });
    const [, a, b, cc] = c.upstreams;
    expect(a?.baseUrl).toBe('http://127.0.0.1:8080/v1');
    expect(b).toMatchObject({ baseUrl: 'http://10.0.0.2:11434/v1', apiKeyEnv: 'B_KEY' });
    expect(b?.apiKey?.reveal()).toBe(OPENAI_KEY);
    expect(cc).toMatchObject({ baseUrl: 'https://api.anthropic.com', apiKeyEnv: 'C_KEY' });
    expect(cc?.apiKey?.reveal()).toBe(ANTHROPIC_KEY);
  });

  it('keeps a demo upstream from the file, adding kiwi-demo to its models', async () => {
    const c = await load(configFile('upstreams:\n  - { name: replay, kind: demo, models: ["demo-*"] }\n'));
    expect(c.upstreams).toEqual([{ name: 'replay', kind: 'demo', models: ['kiwi-demo', 'demo-*'], source: expect.stringMatching(/:2$/) }]);
  });
});

describe('gateway config: environment overrides', () => {
  it('KIWI_HOST and KIWI_PORT win over the file', async () => {
    const c = await load(configFile('host: 127.0.0.1\nport: 9000\n'), { KIWI_HOST: '::1', KIWI_PORT: '0' });
    expect([c.host, c.port]).toEqual(['::1', 0]);
  });

  it('OPENAI_API_KEY adds an openai upstream for every model (OPENAI_BASE_URL moves it); the demo keeps only kiwi-demo', async () => {
    const c = await load(missing, { OPENAI_API_KEY: OPENAI_KEY });
    expect(c.upstreams.map((u) => [u.name, u.kind, u.baseUrl, u.models])).toEqual([
      ['demo', 'demo', undefined, ['kiwi-demo']],
      ['openai', 'openai', 'https://api.openai.com/v1', ['*']],
    ]);
    expect(c.upstreams[1]?.apiKey?.reveal()).toBe(OPENAI_KEY);
    const moved = await load(missing, { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: 'https://proxy.example.com/openai/v1' });
    expect(moved.upstreams[1]?.baseUrl).toBe('https://proxy.example.com/openai/v1');
  });

  it('ANTHROPIC_API_KEY (+ ANTHROPIC_BASE_URL) adds an anthropic upstream for claude-*', async () => {
    const c = await load(missing, { ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999' });
    expect(c.upstreams[1]).toMatchObject({ name: 'anthropic', kind: 'anthropic', baseUrl: 'http://127.0.0.1:9999', models: ['claude-*'] });
    expect(c.upstreams[1]?.apiKey?.reveal()).toBe(ANTHROPIC_KEY);
    expect((await load(missing, { ANTHROPIC_API_KEY: ANTHROPIC_KEY })).upstreams[1]?.baseUrl).toBe('https://api.anthropic.com');
  });

  it('KIWI_UPSTREAM_URL adds a keyless openai upstream for every model, before OPENAI_API_KEY, with a warning', async () => {
    const c = await load(missing, { KIWI_UPSTREAM_URL: 'http://127.0.0.1:11434/v1', OPENAI_API_KEY: OPENAI_KEY, ANTHROPIC_API_KEY: ANTHROPIC_KEY });
    expect(c.upstreams.map((u) => u.name)).toEqual(['demo', 'anthropic', 'local', 'openai']);
    expect(c.upstreams[2]).toEqual({ name: 'local', kind: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', models: ['*'], source: 'environment variable KIWI_UPSTREAM_URL' });
    expect(c.warnings).toEqual([expect.stringMatching(/^upstream "openai" .* never gets model "\*": "local" comes first .* unset OPENAI_API_KEY or KIWI_UPSTREAM_URL$/)]);
  });

  it('an OpenAI-compatible URL without a path gets /v1 (Ollama\'s root works as well as …/v1); a URL with a path is kept', async () => {
    for (const given of ['http://127.0.0.1:11434', 'http://127.0.0.1:11434/', 'http://127.0.0.1:11434/v1']) {
      expect((await load(missing, { KIWI_UPSTREAM_URL: given })).upstreams[1]?.baseUrl).toBe('http://127.0.0.1:11434/v1');
    }
    expect((await load(missing, { KIWI_UPSTREAM_URL: 'http://127.0.0.1:8000/api' })).upstreams[1]?.baseUrl).toBe('http://127.0.0.1:8000/api');
    expect((await load(missing, { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: 'https://proxy.example.com' })).upstreams[1]?.baseUrl).toBe('https://proxy.example.com/v1');
    const file = configFile('upstreams:\n  - { name: o, kind: openai, base_url: "http://127.0.0.1:11434", models: [x] }\n  - { name: a, kind: anthropic, base_url: "http://127.0.0.1:9", api_key_env: K, models: [y] }\n');
    // Anthropic's base is its root: its adapter adds /v1/messages itself.
    expect((await load(file, { K: ANTHROPIC_KEY })).upstreams.map((u) => u.baseUrl)).toEqual([undefined, 'http://127.0.0.1:11434/v1', 'http://127.0.0.1:9']);
  });

  it('adds environment upstreams after the file’s, and not at all when the file already has one by that name or key', async () => {
    const file = configFile('upstreams:\n  - { name: gpt, kind: openai, api_key_env: OPENAI_API_KEY, models: ["gpt-*"] }\n  - { name: local, kind: openai, base_url: "http://127.0.0.1:1/v1", models: [x] }\n');
    const c = await load(file, { OPENAI_API_KEY: OPENAI_KEY, KIWI_UPSTREAM_URL: 'http://127.0.0.1:2/v1', ANTHROPIC_API_KEY: ANTHROPIC_KEY });
    expect(c.upstreams.map((u) => u.name)).toEqual(['demo', 'gpt', 'local', 'anthropic']);
    expect(c.warnings).toEqual([
      expect.stringMatching(/^KIWI_UPSTREAM_URL adds no upstream: the config's upstream "local"/),
      expect.stringMatching(/^OPENAI_API_KEY adds no upstream: the config's upstream "gpt"/),
    ]);
  });

  it('warns that OPENAI_BASE_URL alone does nothing, and that an exact id after a glob is unreachable', async () => {
    const file = configFile('upstreams:\n  - { name: all, kind: openai, base_url: "http://127.0.0.1:1/v1", models: ["gpt-*"] }\n  - { name: late, kind: openai, base_url: "http://127.0.0.1:2/v1", models: ["gpt-4o", "o1"] }\n');
    const c = await load(file, { OPENAI_BASE_URL: 'http://127.0.0.1:3/v1' });
    expect(c.warnings).toEqual([
      expect.stringMatching(/^OPENAI_BASE_URL is set but OPENAI_API_KEY is not.*KIWI_UPSTREAM_URL/),
      expect.stringMatching(/^upstream "late" \(gateway-\d+\.yaml:3\) never gets model "gpt-4o": "all" comes first .*change the order or the models/),
    ]);
  });

  it.each([
    [{ KIWI_PORT: '80a' }, /^environment variable KIWI_PORT="80a" is not a port; set a whole number from 0 to 65535/],
    [{ KIWI_PORT: '70000' }, /KIWI_PORT="70000" is not a port/],
    [{ KIWI_HOST: 'my host' }, /^environment variable KIWI_HOST="my host" is not a host name or IP address/],
    [{ KIWI_UPSTREAM_URL: 'localhost:8080' }, /^environment variable KIWI_UPSTREAM_URL: the URL must start with http:\/\/ or https:\/\/.*set it to e\.g\. http:\/\/127\.0\.0\.1:8080\/v1/],
    [{ OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: 'not a url' }, /^environment variable OPENAI_BASE_URL: "not a url" is not an absolute URL/],
    [{ OPENAI_API_KEY: 'sk one two' }, /^environment variable OPENAI_API_KEY is not usable as a key/],
  ])('refuses bad environment values: %o', async (env, message) => {
    const error = await failure(load(missing, env), 'INVALID_INPUT');
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('sk one two');
  });
});

describe('gateway config: bad values name file:line, the field and what to write', () => {
  it('refuses a file past the size cap without reading it', async () => {
    expect(await refused(`# ${'x'.repeat(300 * 1024)}\n`)).toMatch(/^FILE: is \d+ bytes, larger than the 65536 allowed; it should be a few lines$/);
  });

  it.each([
    ['port: "8787x"\n', /^FILE:1:7: port: .*; see the comments in \.ai\/config\/gateway\.yaml$/],
    ['port: 70000\n', /^FILE:1:7: port: must be 0 to 65535/],
    ['hst: 0.0.0.0\n', /^FILE:1:1: hst: unknown field \(did you mean "host"\?\)/],
    ['host: "my host"\n', /^FILE:1:7: host: must be a host name or IP address/],
    ['upstreams:\n  - { name: g, kind: gemini, models: [x] }\n', /^FILE:2:22: upstreams\[0\]\.kind: must be openai \(also llama\.cpp, Ollama, vLLM…\), anthropic or demo/],
    ['upstreams:\n  - { name: g, kind: openai }\n', /^FILE:2:5: upstreams\[0\]\.models: is required: the model ids or globs it serves/],
    ['upstreams:\n  - { name: g, kind: openai, models: [] }\n', /^FILE:2:38: upstreams\[0\]\.models: list at least one model id or glob/],
    ['upstreams:\n  - { name: g, kind: openai, models: ["gpt 4"] }\n', /^FILE:2:39: upstreams\[0\]\.models\[0\]: must be 1 to 200 printable characters without spaces/],
    ['upstreams:\n  - { name: g, kind: openai, models: [x], modles: [y] }\n', /^FILE:2:43: upstreams\[0\]\.modles: unknown field \(did you mean "models"\?\)/],
    ['upstreams:\n  - { name: g, kind: openai, models: [x] }\n  - { name: g, kind: openai, models: [y] }\n', /^FILE:3:13: upstreams\[1\]\.name: another upstream is already named "g"/],
    ['upstreams:\n  - { name: d, kind: demo, base_url: "http://x", models: [x] }\n', /^FILE:2:5: upstreams\[0\]: a demo upstream takes no base_url or api_key_env/],
    ['upstreams:\n  - { name: a, kind: anthropic, models: [x] }\n', /^FILE:2:5: upstreams\[0\]: an anthropic upstream needs api_key_env: .* api_key_env: ANTHROPIC_API_KEY/],
    ['upstreams:\n  - { name: a, kind: openai, base_url: "ftp://x/v1", models: [x] }\n', /^FILE:2:40: upstreams\[0\]\.base_url: the URL must start with http:\/\/ or https:\/\/, not ftp:; write e\.g\. http:\/\/127\.0\.0\.1:8080\/v1/],
    ['upstreams:\n  - { name: a, kind: openai, base_url: "http://u:p@x/v1", models: [x] }\n', /upstreams\[0\]\.base_url: the URL must not carry credentials; put the key in an environment variable named by api_key_env/],
    ['upstreams:\n  - { name: a, kind: openai, base_url: "${NOPE}/v1", models: [x] }\n', /^FILE:2:40: upstreams\[0\]\.base_url: environment variable NOPE is not set; export it, or write \$\{NOPE:-default\}/],
    ['upstreams:\n  - { name: a, kind: openai, api_key_env: sk-abc123, models: [x] }\n', /^FILE:2:43: upstreams\[0\]\.api_key_env: must be the NAME of an environment variable/],
    ['upstreams:\n  - { name: a, kind: openai, api_key_env: UNSET_KEY, models: [x] }\n', /^FILE:2:43: upstreams\[0\]\.api_key_env: environment variable UNSET_KEY is not set; export it before starting the gateway, or remove this upstream/],
    ['upstreams:\n  - { name: a, kind: openai, timeout_ms: 10, models: [x] }\n', /^FILE:2:42: upstreams\[0\]\.timeout_ms: must be at least 1000/],
    ['limits:\n  max_turns: 0\n', /^FILE:2:14: limits\.max_turns: /],
    ['limits:\n  max_body_bytes: 1e12\n', /^FILE:2:19: limits\.max_body_bytes: /],
    ['limits:\n  body_timeout_ms: 10\n', /^FILE:2:20: limits\.body_timeout_ms: /],
    ['limits:\n  max_connections: 0\n', /^FILE:2:20: limits\.max_connections: /],
    ['limits:\n  shutdown_grace_ms: -1\n', /^FILE:2:22: limits\.shutdown_grace_ms: /],
    ['limits:\n  max_repeats: 1\n', /^FILE:2:16: limits\.max_repeats: must be at least 2/],
    ['prefetch:\n  enabled: "yes"\n', /^FILE:2:12: prefetch\.enabled: must be true or false/],
    ['prefetch:\n  min_cosine: 1.5\n', /^FILE:2:15: prefetch\.min_cosine: /],
    ['prefetch:\n  ttl: 5000\n', /^FILE:2:3: prefetch\.ttl: unknown field/],
    ['prefetch:\n  embedder: use-lite\n', /^FILE:2:13: prefetch\.embedder: must be static or resolver/],
    ['prefetch:\n  min_cosine: 0.9\n', /^FILE:2:15: prefetch\.min_cosine: below 1 .* needs it made in the resolver's own index: add embedder: resolver under prefetch, or set min_cosine: 1/],
    ['prefetch:\n  min_cosine: 0.9\n  embedder: static\n', /^FILE:2:15: prefetch\.min_cosine: below 1/],
    ['mcp:\n  allowed_origins: ["http://localhost:3000/app"]\n', /^FILE:2:21: mcp\.allowed_origins\[0\]: "http:\/\/localhost:3000\/app" is not an origin; write an origin such as http:\/\/localhost:3000/],
    ['mcp:\n  allowed_origins: ["*"]\n', /mcp\.allowed_origins\[0\]: "\*" is not an origin;.*"\*" is not accepted/],
    ['allowed_origins: ["null"]\n', /^FILE:1:19: allowed_origins\[0\]: "null" is not an origin/],
    ['allowed_hosts: ["http://gw.example"]\n', /^FILE:1:17: allowed_hosts\[0\]: must be a host name or address as clients write it in the URL/],
    ['allowed_hosts: []\n', /allowed_hosts: list at least one host name/],
    ['limits:\n  max_concurrent_requests_per_client: 0\n', /limits\.max_concurrent_requests_per_client: /],
    ['alowed_hosts: [x]\n', /unknown field.*did you mean "allowed_hosts"/],
    ['upstreams: [\n  { name: a\n', /^FILE:\d+:\d+: invalid YAML/],
    ['port: 1\nport: 2\n', /^FILE:2:1: invalid YAML/],
    ['- just\n- a list\n', /^FILE:1:1: \(top level\): /],
  ])('%j', async (text, message) => {
    expect(await refused(text)).toMatch(message);
  });

  it('never echoes a key that is not usable', async () => {
    const message = await refused('upstreams:\n  - { name: a, kind: openai, api_key_env: BAD_KEY, models: [x] }\n', { BAD_KEY: 'sk-has a space' });
    expect(message).toMatch(/^FILE:2:43: upstreams\[0\]\.api_key_env: the value of BAD_KEY is not usable as a key/);
    expect(message).not.toContain('has a space');
  });
});

describe('gateway config: describe() for the banner', () => {
  it('shows names, kinds, base URLs and models, and never a key', async () => {
    const file = configFile('upstreams:\n  - { name: gpt, kind: openai, base_url: "http://127.0.0.1:8080/v1?key=QUERYSECRET", api_key_env: MY_KEY, models: ["gpt-*"] }\n');
    const c = await load(file, { MY_KEY: OPENAI_KEY, ANTHROPIC_API_KEY: ANTHROPIC_KEY, KIWI_PORT: '9001' });
    // The address it listens on, which --port 0 or a taken port can make other than the config's.
    const text = describeGatewayConfig(c, 'http://127.0.0.1:40123');
    expect(c.port).toBe(9001);
    expect(text).toContain('gateway: http://127.0.0.1:40123 (config');
    expect(text).toContain('gpt (openai) http://127.0.0.1:8080/v1: gpt-*');
    expect(text).toContain('anthropic (anthropic) https://api.anthropic.com: claude-*');
    expect(text).toContain('demo (demo) offline: kiwi-demo');
    for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, 'QUERYSECRET']) expect(text).not.toContain(secret);
    for (const shown of [JSON.stringify(c), inspect(c, { depth: 10 }), String(c.upstreams[1]?.apiKey)]) {
      expect(shown).not.toContain(OPENAI_KEY);
      expect(shown).not.toContain(ANTHROPIC_KEY);
    }
    expect(describeGatewayConfig(await load(missing), 'http://127.0.0.1:8787')).toMatch(/not found: defaults/);
  });
});

describe('model patterns', () => {
  it('match exact ids, and globs where * spans any characters (slashes and colons too) and ? one', () => {
    expect(modelMatches('gpt-4o', 'gpt-4o')).toBe(true);
    expect(modelMatches('gpt-4o', 'gpt-4o-mini')).toBe(false);
    expect(modelMatches('claude-*', 'claude-sonnet-4-20250514')).toBe(true);
    expect(modelMatches('claude-*', 'Claude-3')).toBe(false);
    expect(modelMatches('*', 'meta-llama/Llama-3.1-8B:q4')).toBe(true);
    expect(modelMatches('llama3.?:*', 'llama3.1:8b')).toBe(true);
    expect(modelMatches('a.b*', 'axb')).toBe(false);
    expect(modelMatches('o1(*)', 'o1(x)')).toBe(true);
  });
});
