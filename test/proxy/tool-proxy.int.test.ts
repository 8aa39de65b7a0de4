import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { createPermissionContext } from '../../src/policy/permission-context.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import type { CallOutcome, ToolCall, ToolCaller } from '../../src/proxy/tool-call.js';
import { createTempProject, FIXTURES, type TempProject } from '../helpers/temp-project.js';

let temp: TempProject;
let project: Project;
let server: Server;
let port = 0;
let outside: string | undefined;

const TOOLS: Record<string, string> = {
  'echo_args.yaml': readFileSync(path.join(FIXTURES, 'proxy', 'echo_args.yaml'), 'utf8'),
  'flags.yaml': `tool_id: show_ref
tool_type: script
executor: subprocess
version: "1.0.0"
description: argument injection target
config: { command: node, script: echo_args.mjs, args: ["{script}", "{ref}"] }
parameters:
  - { name: ref, type: string, required: true }
`,
  'read_file.yaml': `tool_id: read_file
tool_type: script
executor: subprocess
version: "1.0.0"
description: read a file
config: { command: node, script: echo_args.mjs, args: ["{script}", "{path}"] }
parameters:
  - { name: path, type: string, required: true, format: path }
`,
  'greet.yaml': `tool_id: greet
tool_type: script
executor: bash_runtime
version: "1.0.0"
description: a bash script tool reading its arguments from stdin
config: { script: greet.sh }
parameters:
  - { name: who, type: string, required: true }
`,
  'spew.yaml': `tool_id: spew
tool_type: script
executor: subprocess
version: "1.0.0"
description: too much output
config: { command: node, script: spew.mjs, args: ["{script}"], max_output_bytes: 65536 }
`,
  'hang.yaml': `tool_id: hang
tool_type: script
executor: subprocess
version: "1.0.0"
description: never ends
config: { command: node, script: hang.mjs, args: ["{script}"], timeout_ms: 500 }
`,
  'curl.yaml': `tool_id: fetch_with_curl
tool_type: script
executor: subprocess
version: "1.0.0"
description: runs an executable the policy does not list
config: { command: curl, args: ["http://127.0.0.1:1"] }
`,
  'loop.yaml': `tool_id: loop_a
tool_type: script
executor: loop_b
version: "1.0.0"
description: a chain that loops
`,
  'loop_b.yaml': `tool_id: loop_b
tool_type: runtime
executor: loop_a
version: "1.0.0"
description: the other half of the loop
`,
  'api.yaml': `tool_id: lookup
tool_type: api
executor: http_client
version: "1.0.0"
description: local API
config:
  url_template: "http://127.0.0.1:\${TEST_API_PORT}/items/{id}"
  response_transform: { pick: "data", fields: [id, name] }
parameters:
  - { name: id, type: string, required: true }
`,
  'files.yaml': `tool_id: files
tool_type: mcp_server
executor: subprocess
version: "1.0.0"
description: filesystem MCP server
config: { transport: stdio, command: node, args: ["${path.resolve('node_modules/@modelcontextprotocol/server-filesystem/dist/index.js')}", "."] }
`,
  'search.yaml': `tool_id: search_files
tool_type: mcp_tool
executor: files
version: "1.0.0"
description: find files
config: { tool: search_files }
parameters:
  - { name: path, type: string, required: true, format: path }
  - { name: pattern, type: string, required: true }
`,
};

const POLICY = `version: 1
tools: [greet, echo_args, show_ref, read_file, spew, hang, fetch_with_curl, loop_a, lookup, search_files, rate_me]
filesystem: { read: ["docs/**", "docs", "."], write: [] }
commands:
  - { executable: node }
  - { executable: bash }
mcp: { tools: ["files.search_files", "files.list_allowed_directories"] }
rate_limits:
  per_tool: { "rate_me": { max: 2, per_ms: 600000 } }
`;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ data: { id: req.url?.split('/').pop(), name: 'widget', secret: 'hidden' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;

  temp = createTempProject();
  for (const [name, text] of Object.entries(TOOLS)) temp.write(`.ai/tools/test/${name}`, text);
  for (const f of ['echo_args.mjs', 'spew.mjs', 'hang.mjs']) temp.write(`.ai/tools/test/${f}`, await import('node:fs').then((fs) => fs.readFileSync(path.join(FIXTURES, 'proxy', f), 'utf8')));
  temp.write('.ai/tools/test/greet.sh', 'read -r json\nprintf "hello %s" "$json"\n');
  temp.write('.ai/tools/test/rate.yaml', TOOLS['echo_args.yaml']!.replace('tool_id: echo_args', 'tool_id: rate_me'));
  temp.write('.ai/config/policy.yaml', POLICY);
  temp.write('docs/readme.txt', 'hello\n');
  temp.write('secret.txt', 'top secret\n');
  outside = mkdtempSync(path.join(tmpdir(), 'kiwi-outside-'));
  writeFileSync(path.join(outside, 'passwd'), 'root:x:0:0\n');
  symlinkSync(path.join(outside, 'passwd'), path.join(temp.root, 'docs', 'escape.txt'));
  mkdirSync(path.join(temp.root, 'docs', 'sub'), { recursive: true });

  project = await openProject({ projectDir: temp.root, env: { PATH: process.env['PATH'], HOME: process.env['HOME'], TEST_API_PORT: String(port) }, session: 'proxy-test' });
});

afterAll(async () => {
  await project?.close();
  server?.close();
  temp?.remove();
  if (outside) rmSync(outside, { recursive: true, force: true });
});

const call = (tool: string, args: unknown = {}, extra: Pick<ToolCall, 'run'> & { caller?: Partial<ToolCaller> } = {}) =>
  project.proxy.call({ target: { tool, args }, caller: { session: 'proxy-test', client: 'proxy-test', source: 'cli', ...extra.caller }, ...(extra.run ? { run: extra.run } : {}) });

function expectDenied(outcome: CallOutcome, pattern: RegExp): void {
  expect(outcome.status, JSON.stringify(outcome)).toBe('denied');
  if (outcome.status === 'denied') expect(outcome.reason).toMatch(pattern);
}

function expectError(outcome: CallOutcome, code: string, pattern: RegExp): void {
  expect(outcome.status, JSON.stringify(outcome)).toBe('error');
  if (outcome.status === 'error') {
    expect(outcome.error.code).toBe(code);
    expect(outcome.error.message).toMatch(pattern);
  }
}

describe('tool proxy', () => {
  it('runs an allowed subprocess tool, passing shell syntax through as literal argv', async () => {
    const canary = path.join(temp.root, 'CANARY');
    for (const text of ['git; rm -rf ~', `$(touch ${canary})`, '`touch CANARY`', 'a | b > c']) {
      const outcome = await call('echo_args', { text });
      expect(outcome.status).toBe('ok');
      if (outcome.status === 'ok') expect(JSON.parse(outcome.result.text)).toEqual([text]);
    }
    expect(existsSync(canary)).toBe(false);
  });

  it('runs a bash script tool through bash_runtime with the arguments as JSON on stdin', async () => {
    const outcome = await call('greet', { who: 'kiwi; $(id)' });
    expect(outcome.status, JSON.stringify(outcome)).toBe('ok');
    if (outcome.status === 'ok') expect(outcome.result.text).toBe('hello {"who":"kiwi; $(id)"}');
  });

  it('denies a tool that the policy does not list (default deny)', async () => {
    temp.write('.ai/tools/test/unlisted.yaml', TOOLS['echo_args.yaml']!.replace('tool_id: echo_args', 'tool_id: unlisted'));
    const fresh = await openProject({ projectDir: temp.root, env: { PATH: process.env['PATH'] }, session: 'proxy-test-2' });
    try {
      const outcome = await fresh.proxy.call({ target: { tool: 'unlisted', args: { text: 'x' } }, caller: { session: 'proxy-test-2', client: 'proxy-test-2', source: 'cli' } });
      expectDenied(outcome, /unlisted/);
    } finally {
      await fresh.close();
    }
  });

  it('denies an argument that would be read as an option', async () => {
    expectDenied(await call('show_ref', { ref: '--upload-pack=touch /tmp/pwned' }), /starts with "-" and would be read as an option/);
  });

  it('denies an executable the policy does not list', async () => {
    expectDenied(await call('fetch_with_curl'), /curl/);
  });

  it.each([
    ['../secret.txt', /outside the project root/],
    ['%2e%2e/%2e%2e/etc/passwd', /decodes to `..\/..\/etc\/passwd`/],
    ['%252e%252e/secret.txt', /outside the project root/],
    ['/etc/passwd', /outside the project root/],
    ['docs/escape.txt', /symlink|outside the project root/],
    ['secret.txt', /not in `filesystem.read`|read/],
  ])('denies the path %s', async (p, reason) => {
    expectDenied(await call('read_file', { path: p }), reason);
  });

  it('rejects a path with a NUL byte before anything else', async () => {
    expectError(await call('read_file', { path: 'docs/\u0000readme.txt' }), 'INVALID_INPUT', /NUL byte/);
  });

  it('allows a path inside the read globs and passes the checked absolute path', async () => {
    const outcome = await call('read_file', { path: 'docs/readme.txt' });
    expect(outcome.status).toBe('ok');
    if (outcome.status === 'ok') expect(JSON.parse(outcome.result.text)).toEqual([path.join(temp.root, 'docs', 'readme.txt')]);
  });

  it('ends a tool whose output is larger than its cap', async () => {
    expectError(await call('spew'), 'OUTPUT_TOO_LARGE', /65536/);
  });

  it('ends a tool that hangs', async () => {
    expectError(await call('hang'), 'TOOL_TIMEOUT', /500/);
  });

  it('cancels a running tool through its AbortSignal', async () => {
    const controller = new AbortController();
    const pending = call('hang', {}, { run: { signal: controller.signal } });
    setTimeout(() => controller.abort(), 50);
    expectError(await pending, 'TOOL_CANCELLED', /cancel/i);
  });

  it('reports a chain error naming the broken link', async () => {
    expectError(await call('loop_a'), 'CHAIN_INVALID', /loop_a -> loop_b -> loop_a loops/);
  });

  it('refuses look-alike tool names and names the character', async () => {
    expectDenied(await call('echo_\u0430rgs', { text: 'x' }), /U\+0430/);
  });

  it('reports an unknown tool', async () => {
    expectError(await call('no_such_tool'), 'TOOL_NOT_FOUND', /no tool `no_such_tool`/);
  });

  it('rejects arguments that do not fit the parameters', async () => {
    expectError(await call('echo_args', { txt: 'x' }), 'INVALID_INPUT', /unknown argument `txt`/);
  });

  it('rate-limits a tool', async () => {
    expect((await call('rate_me', { text: '1' })).status).toBe('ok');
    expect((await call('rate_me', { text: '2' })).status).toBe('ok');
    expectDenied(await call('rate_me', { text: '3' }), /rate/i);
  });

  it('flags a caller that repeats the same call', async () => {
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await call('echo_args', { text: 'same again' }));
    expect(outcomes.map((o) => o.stuck)).toEqual([false, false, true]);
  });

  it('never lets a call-level context widen the policy', async () => {
    const wide = createPermissionContext(temp.root, { tools: ['*'], fsRead: ['**'], fsWrite: ['**'], commands: [{ executable: 'curl' }], mcpTools: ['*'], fsSecrets: [], mcpPathArgs: {}, rateLimits: { perTool: {} } }, 'wide test context');
    expectDenied(await call('fetch_with_curl', {}, { caller: { context: wide } }), /curl/);
    expect((await call('read_file', { path: 'secret.txt' }, { caller: { context: wide } })).status).not.toBe('ok');
  });

  it('runs an api tool against a local HTTP server and applies the response transform', async () => {
    const outcome = await call('lookup', { id: 'a/b c' });
    expect(outcome.status, JSON.stringify(outcome)).toBe('ok');
    if (outcome.status === 'ok') expect(outcome.result.data).toEqual({ id: 'a%2Fb%20c', name: 'widget' });
  });

  it('runs an MCP tool on a real MCP server from npm, and only the MCP tools the policy lists', async () => {
    const outcome = await call('search_files', { path: 'docs', pattern: '*.txt' });
    expect(outcome.status, JSON.stringify(outcome)).toBe('ok');
    if (outcome.status === 'ok') expect(outcome.result.text).toContain('readme.txt');
    const dynamic = await call('files.list_allowed_directories');
    expect(dynamic.status, JSON.stringify(dynamic)).toBe('ok');
    expectDenied(await call('files.write_file', { path: 'x', content: 'y' }), /files.write_file/);
    const listed = await project.proxy.listMcpTools('files');
    expect(listed.status === 'ok' && listed.tools.map((t) => t.qualifiedName).sort()).toEqual(['files.list_allowed_directories', 'files.search_files']);
  });

  it('reuses an earlier identical result only after checking the call like any other, and audits it', async () => {
    const earlier = await call('echo_args', { text: 'speculated' }, { caller: { source: 'prefetch' } });
    expect(earlier.status).toBe('ok');
    if (earlier.status !== 'ok') return;
    const reused = await project.proxy.reuse({ target: { tool: 'echo_args', args: { text: 'speculated' } }, caller: { session: 'proxy-test', client: 'proxy-test', source: 'gateway' } }, earlier);
    expect(reused.status).toBe('ok');
    if (reused.status === 'ok') expect(reused.result).toBe(earlier.result);
    expect(reused.callId).not.toBe(earlier.callId);
    // A narrower context that does not allow the tool denies the reuse too: nothing bypasses the policy.
    const narrow = createPermissionContext(temp.root, { tools: ['greet'], fsRead: [], fsWrite: [], commands: [{ executable: 'node' }], mcpTools: [], fsSecrets: [], mcpPathArgs: {}, rateLimits: { perTool: {} } }, 'narrow test context');
    expectDenied(await project.proxy.reuse({ target: { tool: 'echo_args', args: { text: 'speculated' } }, caller: { session: 'proxy-test', client: 'proxy-test', source: 'gateway', context: narrow } }, earlier), /echo_args/);
    await project.audit.flush();
    const records = await readAuditTail({ dir: project.auditDir, limit: 500, session: 'proxy-test' });
    expect(records.some((r) => r.call_id === reused.callId && r.reused === earlier.callId && r.decision === 'allow' && r.source === 'gateway')).toBe(true);
    expect(records.some((r) => r.call_id === earlier.callId && r.source === 'prefetch')).toBe(true);
  });

  it('audits allowed and denied calls', async () => {
    await project.audit.flush();
    const records = await readAuditTail({ dir: project.auditDir, limit: 500, session: 'proxy-test' });
    expect(records.some((r) => r.decision === 'allow' && r.tool === 'echo_args')).toBe(true);
    expect(records.some((r) => r.decision === 'deny' && r.tool === 'fetch_with_curl' && /curl/.test(r.reason ?? ''))).toBe(true);
    expect(records.some((r) => r.decision === 'allow' && r.error?.code === 'TOOL_TIMEOUT')).toBe(true);
    expect(records.some((r) => r.decision === 'deny' && r.tool === 'no_such_tool' && r.error?.code === 'TOOL_NOT_FOUND')).toBe(true);
  });
});
