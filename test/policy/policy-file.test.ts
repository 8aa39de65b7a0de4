import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { checkCommand } from '../../src/policy/command-check.js';
import { checkPath } from '../../src/policy/path-check.js';
import { checkMcpTool, checkTool } from '../../src/policy/permission-context.js';
import { loadPolicyFile, parsePolicy } from '../../src/policy/policy-file.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'policy');
let root: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'kiwi-policy-file-')));
  await mkdir(join(root, '.ai', 'config'), { recursive: true });
  await mkdir(join(root, 'tmp'), { recursive: true });
  await writeFile(join(root, 'README.md'), '# hi\n');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function policyError(text: string): string {
  try {
    parsePolicy(text, '.ai/config/policy.yaml', root);
  } catch (error) {
    expect(isKiwiError(error, 'INVALID_POLICY')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected INVALID_POLICY');
}

describe('loadPolicyFile', () => {
  it('loads the example policy into a working context', async () => {
    const ctx = await loadPolicyFile(join(fixtures, 'policy.yaml'), root);
    expect(ctx.root).toBe(root);
    expect(ctx.label).toMatch(/^policy .*policy\.yaml$/u);
    expect(checkTool(ctx, 'read_file')).toEqual({ allowed: true });
    expect(checkTool(ctx, 'demo.echo')).toEqual({ allowed: true });
    expect(checkTool(ctx, 'rm_rf')).toMatchObject({ allowed: false, reason: expect.stringContaining('tool `rm_rf` is not in `tools`') });
    expect(checkMcpTool(ctx, 'files.read_file')).toEqual({ allowed: true });
    expect(checkCommand(ctx, ['git', 'status'])).toEqual({ allowed: true });
    expect(checkCommand(ctx, ['git', 'fetch'])).toMatchObject({ allowed: false });
    expect(checkCommand(ctx, ['git', 'log', '--config=x'])).toMatchObject({ allowed: false });
    expect(await checkPath(ctx, 'README.md', 'read')).toMatchObject({ allowed: true });
    expect(await checkPath(ctx, 'tmp/out.txt', 'write')).toMatchObject({ allowed: true });
    expect(await checkPath(ctx, 'README.md', 'write')).toMatchObject({ allowed: false });
    expect(ctx.rules.rateLimits).toEqual({
      perTool: { read_file: { max: 2, perMs: 1000 }, '*': { max: 60, perMs: 60000 } },
      perClient: { max: 600, perMs: 60000 },
    });
    expect(Object.keys(ctx.rules.rateLimits.perTool)).toEqual(['read_file', '*']);
  });

  it('labels a policy inside the root by its relative path', async () => {
    const file = join(root, '.ai', 'config', 'policy.yaml');
    await writeFile(file, 'version: 1\ntools: [read_file]\n');
    const ctx = await loadPolicyFile(file, root);
    expect(ctx.label).toBe('policy .ai/config/policy.yaml');
    expect(checkTool(ctx, 'write_file')).toEqual({ allowed: false, reason: 'denied by policy .ai/config/policy.yaml: tool `write_file` is not in `tools`' });
    await rm(file);
  });

  it('a missing policy file allows nothing, and says so', async () => {
    const ctx = await loadPolicyFile(join(root, '.ai', 'config', 'policy.yaml'), root);
    expect(ctx.label).toBe('policy .ai/config/policy.yaml (file missing, so nothing is allowed)');
    expect(checkTool(ctx, 'read_file')).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml (file missing, so nothing is allowed): tool `read_file` is not in `tools`',
    });
    expect(await checkPath(ctx, 'README.md', 'read')).toMatchObject({ allowed: false });
    expect(checkCommand(ctx, ['ls'])).toMatchObject({ allowed: false });
    expect(checkMcpTool(ctx, 'files.read')).toMatchObject({ allowed: false });
  });

  it('a missing root is an error that says what to pass', async () => {
    await expect(loadPolicyFile(join(root, 'nope', 'policy.yaml'), join(root, 'nope'))).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('cannot be opened; pass the folder that holds `.ai/`'),
    });
  });

  it('refuses a policy over 256 KiB, saying how large it is', async () => {
    const file = join(root, '.ai', 'config', 'policy.yaml');
    await writeFile(file, `version: 1\n${'#'.repeat(256 * 1024)}\n`);
    await expect(loadPolicyFile(file, root)).rejects.toMatchObject({
      code: 'INVALID_POLICY',
      message: '.ai/config/policy.yaml: is 262156 bytes, larger than the 262144 allowed; it should be a few lines',
    });
    await rm(file);
  });

  it('names the file and line for malformed YAML', async () => {
    await expect(loadPolicyFile(join(fixtures, 'malformed.yaml'), root)).rejects.toMatchObject({
      code: 'INVALID_POLICY',
      message: expect.stringMatching(/malformed\.yaml:\d+:\d+: invalid YAML: .+$/u),
    });
  });

  it('names the file, field and the allowed fields for unknown fields', async () => {
    const error = await loadPolicyFile(join(fixtures, 'unknown-field.yaml'), root).catch((e: unknown) => e);
    expect(isKiwiError(error, 'INVALID_POLICY')).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(/unknown-field\.yaml:3:29: filesystem\.wirte: /u);
    expect(message).toContain('filesystem.wirte: unknown field; the fields here are read, write, allow_secret_paths');
    expect(message).toContain('commands[0].deny_arg: unknown field (did you mean "deny_args"?); the fields here are executable, subcommands, deny_args, allow_flags');
  });

  it('stops before starting when the signal has fired', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(loadPolicyFile(join(fixtures, 'policy.yaml'), root, ac.signal)).rejects.toMatchObject({ code: 'TOOL_CANCELLED' });
  });
});

describe('parsePolicy: clear errors', () => {
  it('an empty file', () => {
    expect(policyError('')).toBe('.ai/config/policy.yaml: (top level): is empty; write `version: 1` and the rules (tools, filesystem, commands, mcp, rate_limits)');
  });

  it('a list instead of a mapping', () => {
    expect(policyError('- a\n- b\n')).toBe('.ai/config/policy.yaml:1:1: (top level): must be a mapping of fields (version, tools, filesystem, …), not a list');
  });

  it('a missing or wrong version', () => {
    expect(policyError('tools: [a]\n')).toBe('.ai/config/policy.yaml:1:1: version: must be 1 (write `version: 1`)');
    expect(policyError('version: 2\n')).toBe('.ai/config/policy.yaml:1:10: version: must be 1 (write `version: 1`)');
  });

  it('an unknown top-level field', () => {
    expect(policyError('version: 1\ntool: [a]\n')).toBe(
      '.ai/config/policy.yaml:2:1: tool: unknown field (did you mean "tools"?); the fields here are version, tools, filesystem, commands, mcp, sandbox, isolation, network, created_items, hooks, approvals, annealing, rate_limits',
    );
  });

  it('created_items: names only, a quota of 0 or more, no other field', () => {
    expect(policyError('version: 1\ncreated_items: { env: ["AWS_*"] }\n')).toContain("created_items.env[0]: must be an environment variable's name (letters, digits and _), no globs");
    expect(policyError('version: 1\ncreated_items: { quota_mb: -1 }\n')).toContain('created_items.quota_mb: must be 0 (agents create nothing) or more');
    expect(policyError('version: 1\ncreated_items: { envs: [A] }\n')).toContain('created_items.envs: unknown field (did you mean "env"?); the fields here are env, quota_mb');
  });

  it('wrong types', () => {
    expect(policyError('version: 1\ntools: read_file\n')).toBe('.ai/config/policy.yaml:2:8: tools: must be a list (e.g. `[a, b]`)');
    expect(policyError('version: 1\ncommands: [{ subcommands: [status] }]\n')).toBe('.ai/config/policy.yaml:2:12: commands[0].executable: is required');
  });

  it('path globs that leave the root', () => {
    expect(policyError('version: 1\nfilesystem: { read: ["../**"] }\n')).toBe(
      '.ai/config/policy.yaml:2:22: filesystem.read[0]: must be a glob relative to the project root, with `/` between folders and no `..` (e.g. "src/**")',
    );
    expect(policyError('version: 1\nfilesystem: { write: ["/etc/**"] }\n')).toContain('filesystem.write[0]: must be a glob relative');
  });

  it('a bad deny regex, a bad flag, a bad rate limit', () => {
    expect(policyError('version: 1\ncommands: [{ executable: git, deny_args: ["(["] }]\n')).toContain(
      'commands[0].deny_args[0]: must be a valid regular expression',
    );
    expect(policyError('version: 1\ncommands: [{ executable: git, allow_flags: ["oneline"] }]\n')).toContain('commands[0].allow_flags[0]: must start with `-`');
    expect(policyError('version: 1\nrate_limits: { per_tool: { "*": { max: 0, per_ms: 10 } } }\n')).toBe(
      '.ai/config/policy.yaml:2:40: rate_limits.per_tool.*.max: must be at least 1',
    );
    expect(policyError('version: 1\nrate_limits: { per_session: { max: 5, perMs: 10 } }\n')).toContain(
      'rate_limits.per_session.perMs: unknown field (did you mean "per_ms"?); the fields here are max, per_ms',
    );
  });

  it('per_client limits each client; per_session is its older name; not both', () => {
    const limit = { max: 5, perMs: 10 };
    expect(parsePolicy('version: 1\nrate_limits: { per_client: { max: 5, per_ms: 10 } }\n', 'p.yaml', root).rules.rateLimits.perClient).toEqual(limit);
    expect(parsePolicy('version: 1\nrate_limits: { per_session: { max: 5, per_ms: 10 } }\n', 'p.yaml', root).rules.rateLimits.perClient).toEqual(limit);
    expect(policyError('version: 1\nrate_limits: { per_client: { max: 5, per_ms: 10 }, per_session: { max: 5, per_ms: 10 } }\n')).toContain('sets both per_client and per_session (its older name); keep per_client');
  });

  it('secret paths and MCP path arguments', () => {
    const rules = parsePolicy('version: 1\nfilesystem: { read: [".env.example"], allow_secret_paths: [".env.example"] }\nmcp: { tools: ["notes.*"], path_args: { "notes.*": [location] } }\n', 'p.yaml', root).rules;
    expect(rules).toMatchObject({ fsSecrets: ['.env.example'], mcpPathArgs: { 'notes.*': ['location'] } });
    expect(policyError('version: 1\nfilesystem: { allow_secret_paths: ["/etc/**"] }\n')).toContain('filesystem.allow_secret_paths[0]: must be a glob relative to the project root');
    expect(policyError('version: 1\nmcp: { path_args: { "x.*": ["a b"] } }\n')).toContain('must be an argument name');
  });

  it('an unclosed "[" is named at its own line, not where the parser noticed it', () => {
    expect(policyError('version: 1\n\ntools: [read_file, git_log\nfilesystem:\n  read: ["**"]\n')).toBe(
      '.ai/config/policy.yaml:3:8: invalid YAML: the "[" opened at line 3, column 8 is not closed; end that list with "]" (the parser noticed at line 4, column 1: Flow sequence in block collection must be sufficiently indented and end with a ])',
    );
  });

  it('duplicate keys', () => {
    expect(policyError('version: 1\ntools: [a]\ntools: [b]\n')).toMatch(/:3:1: invalid YAML: .*[Uu]nique/u);
  });

  it('fields left out allow nothing', () => {
    const ctx = parsePolicy('version: 1\n', 'p.yaml', root);
    expect(ctx.rules).toEqual({ tools: [], fsRead: [], fsWrite: [], fsSecrets: [], commands: [], mcpTools: [], mcpPathArgs: {}, rateLimits: { perTool: {} } });
  });
});

describe('parsePolicy: network', () => {
  it('allows no private host by default, and reads names, addresses and ranges', () => {
    expect(parsePolicy('version: 1\n', 'p.yaml', root).network).toEqual({ allowPrivate: [] });
    const text = 'version: 1\nnetwork:\n  allow_private: ["10.0.0.0/8", "internal.example", "fd00::/8", "127.0.0.1"]\n';
    expect(parsePolicy(text, 'p.yaml', root).network).toEqual({ allowPrivate: ['10.0.0.0/8', 'internal.example', 'fd00::/8', '127.0.0.1'] });
  });

  it('refuses an unknown field and an entry that is not a host, an address or a range, saying what is allowed', () => {
    expect(policyError('version: 1\nnetwork: { allow_privat: [x] }\n')).toBe(
      '.ai/config/policy.yaml:2:12: network.allow_privat: unknown field (did you mean "allow_private"?); the fields here are allow_private',
    );
    for (const bad of ['10.0.0.0/40', 'http://db.internal', '*.internal', 'db.internal:5432', '2130706433']) {
      expect(policyError(`version: 1\nnetwork: { allow_private: ["${bad}"] }\n`), bad).toBe(
        '.ai/config/policy.yaml:2:28: network.allow_private[0]: must be a host name ("db.internal"), an IP address ("10.0.0.5") or a CIDR range ("10.0.0.0/8", "fd00::/8"); no wildcards, URLs or ports',
      );
    }
  });
});

describe('parsePolicy: sandbox', () => {
  it('defaults to auto with no network and default limits', () => {
    expect(parsePolicy('version: 1\n', 'p.yaml', root).sandbox).toEqual({ mode: 'auto', network: [], secrets: {}, limits: {} });
  });

  it('reads mode, bwrap, network globs, per-tool secrets and limits', () => {
    const text = 'version: 1\nsandbox:\n  mode: require\n  bwrap: /usr/bin/bwrap\n  network: [fetch_*]\n  secrets: { "git_*": [".git/**"] }\n  limits: { processes: 64, memory_mb: 512, cpu_seconds: 5 }\n';
    expect(parsePolicy(text, 'p.yaml', root).sandbox).toEqual({
      mode: 'require',
      bwrap: '/usr/bin/bwrap',
      network: ['fetch_*'],
      secrets: { 'git_*': ['.git/**'] },
      limits: { processes: 64, memoryBytes: 512 * 1024 * 1024, cpuSeconds: 5 },
    });
  });

  it('names a bad mode, a relative bwrap path and an unknown limit', () => {
    expect(policyError('version: 1\nsandbox: { mode: maybe }\n')).toBe('.ai/config/policy.yaml:2:18: sandbox.mode: must be auto, require or off');
    expect(policyError('version: 1\nsandbox: { bwrap: bwrap }\n')).toBe('.ai/config/policy.yaml:2:19: sandbox.bwrap: must be an absolute path to the bwrap executable');
    expect(policyError('version: 1\nsandbox: { limits: { procs: 3 } }\n')).toMatch(/sandbox\.limits\.procs: unknown field; the fields here are processes, memory_mb, cpu_seconds/u);
  });
});
