import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_NAMES, runCli } from '../../../src/app/run-cli.js';
import { FIXTURES, REPO_ROOT } from '../../helpers/temp-project.js';

let root: string;
let registry: Server;
let env: Record<string, string | undefined>;

/** Runs the CLI in-process on a copy of the demo project, with the environment a user would have. */
async function kiwi(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env, cwd: root, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Every audit file with its size: what a command appended shows as a new file or a bigger one. */
function auditFiles(): Record<string, number> {
  const dir = path.join(root, '.ai', 'logs', 'audit');
  if (!existsSync(dir)) return {};
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl'));
  return Object.fromEntries(files.map((f) => [f, statSync(path.join(dir, f)).size]));
}

beforeAll(async () => {
  // A stand-in for the npm registry, so the demo's API tool runs without the network.
  registry = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ name: req.url?.split('/')[1], version: '9.9.9', description: 'from the local registry', license: 'MIT', readme: 'long text' }));
  });
  await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
  const port = (registry.address() as { port: number }).port;

  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-cli-')));
  // Generated state (audit logs, the vector index) is not part of the demo.
  const generated = ['logs', 'vectors'].map((d) => path.join(REPO_ROOT, '.ai', d));
  cpSync(path.join(REPO_ROOT, '.ai'), path.join(root, '.ai'), { recursive: true, filter: (src) => !generated.some((g) => src.startsWith(g)) });
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(root, 'node_modules'));
  writeFileSync(path.join(root, 'README.md'), 'one two three\nfour\n');
  env = { PATH: process.env['PATH'], HOME: root, KIWI_USER_DIR: path.join(root, 'no-user-tier'), NPM_REGISTRY_URL: `http://127.0.0.1:${port}` };
});

afterAll(() => {
  registry?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('kiwi CLI on the demo .ai/', () => {
  it('validates the demo registry', async () => {
    const r = await kiwi('tools', 'validate');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/ok: \d+ tools, \d+ directives, 1 knowledge entries, all valid/);
  });

  it('lists tools as JSON', async () => {
    const r = await kiwi('tools', 'list', '--json');
    const ids = (JSON.parse(r.out) as Array<{ id: string }>).map((t) => t.id);
    expect(ids).toEqual(expect.arrayContaining(['read_file', 'word_count', 'npm_package_info', 'search_files', 'files']));
  });

  it('runs a script tool (node) and a script tool (python)', async () => {
    const read = await kiwi('run', 'read_file', '--args', '{"path": "README.md"}');
    expect(read).toMatchObject({ code: 0, out: 'one two three\nfour' });
    const count = await kiwi('run', 'word_count', '--args', '{"path": "README.md"}', '--json');
    expect(count.code).toBe(0);
    expect(JSON.parse(count.out).result.data).toMatchObject({ lines: 2, words: 4 });
  });

  it('runs an API tool', async () => {
    const r = await kiwi('run', 'npm_package_info', '--args', '{"package": "undici"}');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ name: 'undici', version: '9.9.9', description: 'from the local registry', license: 'MIT' });
  });

  it('runs an MCP tool, declared and as server.tool', async () => {
    const declared = await kiwi('run', 'search_files', '--args', '{"path": ".", "pattern": "*.md"}');
    expect(declared.code).toBe(0);
    expect(declared.out).toContain(path.join(root, 'README.md'));
    const dynamic = await kiwi('run', 'files.list_allowed_directories');
    expect(dynamic.code).toBe(0);
    expect(dynamic.out).toContain(root);
  });

  it('exits 3 on a denied call and shows both decisions in the audit tail', async () => {
    const denied = await kiwi('run', 'read_file', '--args', '{"path": "../../etc/passwd"}');
    expect(denied.code).toBe(3);
    expect(denied.err).toMatch(/^kiwi: denied: .*outside the project root/);
    const tail = await kiwi('audit', 'tail', '-n', '50');
    expect(tail.code).toBe(0);
    expect(tail.out).toMatch(/ALLOW\s+read_file/);
    expect(tail.out).toMatch(/DENY\s+read_file .*etc\/passwd/);
  });

  it('narrows the policy to a directive\'s permissions', async () => {
    expect((await kiwi('run', 'read_file', '--args', '{"path": "README.md"}', '--directive', 'review_changes')).code).toBe(0);
    const r = await kiwi('run', 'word_count', '--args', '{"path": "README.md"}', '--directive', 'review_changes');
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/denied by directive review_changes: tool `word_count`/);
  });

  it('shows the tools of an MCP server the policy allows, and writes no audit record (showing calls no tool)', async () => {
    const before = auditFiles();
    const r = await kiwi('tools', 'show', 'files');
    expect(r.code).toBe(0);
    expect(r.out).toContain('files.search_files');
    expect(r.out).not.toContain('files.write_file');
    expect(auditFiles()).toEqual(before);
  });
});

describe('kiwi index / kiwi resolve (the real USE-lite model, LanceDB in .ai/vectors)', () => {
  it('indexes the demo tools, then re-indexes nothing', async () => {
    const first = await kiwi('index');
    expect(first.code, first.err).toBe(0);
    expect(first.out).toMatch(/^indexed \d+ tools and \d+ directives and knowledge entries with use-lite-512 in [\d.]+ s: \d+ added, 0 updated, 0 removed, 0 unchanged/);
    // What a first build does, said before it embeds (stderr is not a terminal here: lines, no counter in place).
    expect(first.err).toMatch(/^kiwi: first start: embedding \d+ tools into \.ai\/vectors; later starts reuse it$/m);
    const again = await kiwi('index');
    expect(again.out).toMatch(/0 added, 0 updated, 0 removed, \d+ unchanged/);
    expect(again.err).not.toMatch(/embedding/);
  }, 60_000);

  it('resolves an intent to a call with its arguments, and prints candidates and timings; plain words below the gate are asked back', async () => {
    const r = await kiwi('resolve', 'read_file {"path": "README.md"}');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^call: read_file \{"path":"README.md"/);
    expect(r.out).toMatch(/time: [\d.]+ ms \(embed [\d.]+, search [\d.]+, arguments [\d.]+\)/);
    const asked = await kiwi('resolve', 'read the file "README.md"');
    expect(asked.code).toBe(4);
    expect(asked.out).toMatch(/^unresolved: `read_file` may fit, but a call from plain words is not sure enough to run .*write it exactly as read_file/);
    expect(asked.out).toMatch(/\nvalues read: \{"path":"README\.md"\}; the exact call: read_file \{"path":"README\.md"\}\ncandidates:\n\s+[\d.]+\s+read_file/);
    const json = JSON.parse((await kiwi('resolve', 'show the git status of the repository', '--json')).out);
    expect(json.status).toBe('unresolved');
    expect(json.candidates[0]).toMatchObject({ tool: 'git_status' });
  }, 60_000);

  it('exits 4 with the reason when an intent cannot be resolved', async () => {
    const r = await kiwi('resolve', 'count the words of a file');
    expect(r.code).toBe(4);
    expect(r.out).toMatch(/^unresolved: .*word_count.*`path`/);
  }, 60_000);

  it("says that it resolves without resolver.yaml's fallback model, which only the gateway routes to", async () => {
    const file = path.join(root, '.ai', 'config', 'resolver.yaml');
    writeFileSync(file, 'fallback: { model: "qwen3:0.6b" }\n');
    try {
      const r = await kiwi('resolve', 'count the words of a file');
      expect(r.code).toBe(4);
      expect(r.err).toMatch(/resolver\.yaml names a fallback model, which only the gateway routes to .*here intents resolve without it/);
    } finally {
      rmSync(file, { force: true });
    }
  }, 60_000);
});

describe('kiwi sign / verify', () => {
  it('verifies the Kiwi MCP test vector and rejects a one-byte change, then re-signs it', async () => {
    const file = path.join(root, 'agent.md');
    const vector = readFileSync(path.join(FIXTURES, 'registry', 'agent-directive.signed.md'), 'utf8');
    writeFileSync(file, vector);
    expect(await kiwi('verify', 'agent.md')).toMatchObject({ code: 0, out: 'valid     agent.md' });
    const at = vector.indexOf('<directive') + 20;
    writeFileSync(file, vector.slice(0, at) + (vector[at] === 'x' ? 'y' : 'x') + vector.slice(at + 1));
    const bad = await kiwi('verify', 'agent.md');
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/^INVALID\s+agent\.md: stored hash 96440106/);
    expect((await kiwi('sign', 'agent.md')).code).toBe(0);
    expect((await kiwi('verify', 'agent.md')).code).toBe(0);
  });
});

describe('kiwi usage errors', () => {
  it.each([
    [['frob'], /unknown command `frob`/],
    [['run'], /give exactly one tool id/],
    [['run', 'read_file', '--args', '{bad'], /--args is not valid JSON/],
    [['run', 'read_file', '--nope'], /Unknown option '--nope'/],
    [['audit', 'tail', '-n', '0'], /-n must be a whole number/],
    [['tools', 'explode'], /unknown subcommand `explode`/],
    [['sign'], /name at least one file/],
    [['run', 'git_status', '--directive', 'nope'], /no directive `nope`/],
    [['resolve'], /give the intent text/],
    [['resolve', 'x', '--limit', '0'], /--limit must be a whole number/],
  ])('%j fails with one clear line and exit 2', async (argv, message) => {
    const r = await kiwi(...argv);
    expect(r.code).toBe(2);
    expect(r.err.split('\n')).toHaveLength(1);
    expect(r.err).toMatch(message);
  });

  it('reports a broken registry with file, field and what to write, and exits 1', async () => {
    writeFileSync(path.join(root, '.ai', 'tools', 'broken.yaml'), 'tool_id: broken\ntool_type: scrpt\nexecutor: subprocess\nversion: "1"\ndescription: x\n');
    writeFileSync(path.join(root, '.ai', 'tools', 'looping.yaml'), 'tool_id: looping\ntool_type: runtime\nexecutor: looping2\nversion: "1"\ndescription: x\n');
    writeFileSync(path.join(root, '.ai', 'tools', 'looping2.yaml'), 'tool_id: looping2\ntool_type: runtime\nexecutor: looping\nversion: "1"\ndescription: x\n');
    try {
      const r = await kiwi('tools', 'validate');
      expect(r.code).toBe(1);
      expect(r.out).toMatch(/broken\.yaml.*tool_type.*did you mean "script"/);
      expect(r.out).toMatch(/chain looping -> looping2 -> looping loops/);
      // Running it says what is wrong with its file, not that there is no such tool.
      const run = await kiwi('run', 'broken');
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/^kiwi: broken is not loaded, its file is invalid; fix it and run again:\n {2}\.ai\/tools\/broken\.yaml.*tool_type.*did you mean "script"/);
      expect(run.err).not.toMatch(/TOOL_NOT_FOUND/);
    } finally {
      for (const f of ['broken.yaml', 'looping.yaml', 'looping2.yaml']) rmSync(path.join(root, '.ai', 'tools', f));
    }
  });

  it("fails a template that names no parameter and a hook whose directive does not exist, each saying where and what to fix", async () => {
    const tool = path.join(root, '.ai', 'tools', 'typo.yaml');
    const policy = path.join(root, '.ai', 'config', 'policy.yaml');
    const before = readFileSync(policy, 'utf8');
    writeFileSync(tool, 'tool_id: typo\ntool_type: script\nexecutor: python_runtime\nversion: "1.0.0"\ndescription: x\nconfig: { script: word_count.py, args: ["{script}", "{pth}"] }\nparameters:\n  - { name: path, type: string, required: true }\n');
    expect(before).toContain('\nhooks:\n');
    writeFileSync(policy, before.replace('\nhooks:\n', '\nhooks:\n  - when: event.name == "error"\n    directive: { name: retry_on_timout }\n'));
    try {
      const r = await kiwi('tools', 'validate');
      expect(r.code, r.out + r.err).toBe(1);
      expect(r.out).toMatch(/typo\.yaml: config\.args\[1\] uses \{pth\}, which is not a parameter of typo \(did you mean "path"\?\)/);
      expect(r.out).toMatch(/policy\.yaml:\d+: the hook's directive "retry_on_timout" is not in \.ai\/directives\/ \(did you mean "retry_on_timeout"\?\)/);
    } finally {
      rmSync(tool);
      writeFileSync(policy, before);
    }
  });

  it('prints a pattern it cannot enforce as a warning and still exits 0', async () => {
    const file = path.join(root, '.ai', 'tools', 'lookahead.yaml');
    writeFileSync(file, 'tool_id: lookahead\ntool_type: runtime\nexecutor: subprocess\nparameters:\n  - { name: pin, type: string, pattern: "^(?!0000)\\\\d{4}$" }\n');
    try {
      const r = await kiwi('tools', 'validate');
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/^warning: \.ai\/tools\/lookahead\.yaml:5:\d+: parameters\[0\]\.pattern: the pattern of parameter `pin` is not enforced: RE2 cannot compile it/m);
      expect(r.err).toMatch(/all valid/);
    } finally {
      rmSync(file);
    }
  });

  it('makes keys with roles and scopes, lists them, and refuses a key that would serve nothing, saying what to add', async () => {
    try {
      const made = await kiwi('keys', 'create', 'support', '--role', 'agent,client', '--agent', 'support-*', '--agent', 'triage', '--json');
      expect(made.code, made.err).toBe(0);
      expect(JSON.parse(made.out)).toMatchObject({ client: 'support', roles: ['agent', 'client'], agents: ['support-*', 'triage'], key: expect.stringMatching(/^kiwi_/) });
      expect((await kiwi('keys', 'create', 'ops', '--role', 'runner', '--tool', 'read_file')).err).toMatch(/for client ops \(roles runner \(tools read_file\)\) created/);
      expect((await kiwi('keys', 'list')).out).toMatch(/support {2}roles agent,client \(agents support-\*,triage\) {2}created/);
      const refused = await kiwi('keys', 'create', 'bot', '--role', 'runner');
      expect(refused.code).not.toBe(0);
      expect(refused.err).toMatch(/runner role must name the tool ids it serves \(--tool NAME/);
    } finally {
      rmSync(path.join(root, '.ai', 'state', 'keys.json'), { force: true });
    }
  });

  it('prints its version, the package.json one, with --version and -V', async () => {
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) expect(await kiwi(flag)).toEqual({ code: 0, out: `kiwi ${version}`, err: '' });
  });

  it('answers --help and -h on every command with its page on stdout, exit 0, running nothing', async () => {
    const before = auditFiles();
    for (const name of COMMAND_NAMES) {
      for (const flag of ['--help', '-h']) {
        const r = await kiwi(name, flag);
        expect(r.code, `kiwi ${name} ${flag}: ${r.err}`).toBe(0);
        expect(r.out, `kiwi ${name} ${flag}`).toMatch(new RegExp(`^NAME\\n {2}kiwi ${name} — [^]*^USAGE\\n {2}kiwi ${name}\\b`, 'm'));
        expect(r.err).toBe('');
      }
    }
    // After `--`, a -h is an argument like any other.
    expect((await kiwi('approvals', 'grant', '--', '-h')).out).not.toMatch(/^NAME/);
    expect(auditFiles()).toEqual(before);
  });
});
