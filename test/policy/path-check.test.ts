import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPath } from '../../src/policy/path-check.js';
import { childContext, createPermissionContext, emptyRules, type PermissionContext, type PermissionRules } from '../../src/policy/permission-context.js';

let base: string;
let root: string;
let outside: string;
let ctx: PermissionContext;

function rules(partial: Partial<PermissionRules>): PermissionRules {
  return { ...emptyRules(), ...partial };
}

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'kiwi-path-check-')));
  root = join(base, 'proj');
  outside = join(base, 'outside');
  await mkdir(join(root, 'src'), { recursive: true });
  await mkdir(join(root, 'tmp'), { recursive: true });
  await mkdir(join(root, '.git'), { recursive: true });
  await mkdir(outside, { recursive: true });
  // A sibling whose name starts with the root's name: a plain string-prefix test would let it in.
  await mkdir(`${root}-evil`, { recursive: true });
  await writeFile(join(root, 'src', 'a.ts'), 'export {};\n');
  await writeFile(join(root, '.env'), 'SECRET=1\n');
  await writeFile(join(outside, 'secret'), 'top secret\n');
  await symlink(join(outside, 'secret'), join(root, 'src', 'leak'));
  await symlink(outside, join(root, 'tmp', 'outdir'));
  await symlink(join(root, 'src', 'a.ts'), join(root, 'src', 'alias.ts'));
  await symlink(join(root, 'src', 'a.ts'), join(root, 'tmp', 'to-src'));
  await symlink(join(outside, 'not-yet'), join(root, 'tmp', 'dangling'));
  await symlink(join(root, 'tmp', 'loop-b'), join(root, 'tmp', 'loop-a'));
  await symlink(join(root, 'tmp', 'loop-a'), join(root, 'tmp', 'loop-b'));
  ctx = createPermissionContext(root, rules({ fsRead: ['**'], fsWrite: ['tmp/**'] }), 'policy .ai/config/policy.yaml');
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

async function reason(raw: string, access: 'read' | 'write' = 'read', c: PermissionContext = ctx): Promise<string> {
  const d = await checkPath(c, raw, access);
  if (d.allowed) throw new Error(`expected ${JSON.stringify(raw)} to be denied, got ${d.resolved}`);
  return d.reason;
}

describe('checkPath: allowed paths', () => {
  it('allows a relative path that the read glob covers and returns the real path', async () => {
    expect(await checkPath(ctx, 'src/a.ts', 'read')).toEqual({ allowed: true, resolved: join(root, 'src', 'a.ts') });
  });

  it('allows an absolute path inside the root', async () => {
    expect(await checkPath(ctx, join(root, 'src', 'a.ts'), 'read')).toEqual({ allowed: true, resolved: join(root, 'src', 'a.ts') });
  });

  it('allows a symlink that stays inside the root, resolved to its target', async () => {
    expect(await checkPath(ctx, 'src/alias.ts', 'read')).toEqual({ allowed: true, resolved: join(root, 'src', 'a.ts') });
  });

  it('allows writing a file that does not exist yet in an allowed folder', async () => {
    expect(await checkPath(ctx, 'tmp/new/deeper/file.txt', 'write')).toEqual({ allowed: true, resolved: join(root, 'tmp', 'new', 'deeper', 'file.txt') });
  });

  it('lets `..` that stays inside the root through, judged by where it lands', async () => {
    expect(await checkPath(ctx, 'tmp/../src/a.ts', 'read')).toEqual({ allowed: true, resolved: join(root, 'src', 'a.ts') });
    expect(await reason('tmp/../src/a.ts', 'write')).toBe(
      'denied by policy .ai/config/policy.yaml: path `tmp/../src/a.ts` (`src/a.ts`) is not in `filesystem.write`',
    );
  });

  it('names the root `.`; `**` covers it', async () => {
    expect(await checkPath(ctx, '.', 'read')).toEqual({ allowed: true, resolved: root });
    const narrow = createPermissionContext(root, rules({ fsRead: ['src/**'] }), 'policy p');
    expect(await reason('.', 'read', narrow)).toBe('denied by policy p: path `.` is not in `filesystem.read` or `filesystem.write`');
  });
});

describe('checkPath: globs', () => {
  it('write globs imply read; read globs do not imply write', async () => {
    const c = createPermissionContext(root, rules({ fsRead: ['src/**'], fsWrite: ['tmp/**'] }), 'policy p');
    expect((await checkPath(c, 'tmp/x.txt', 'read')).allowed).toBe(true);
    expect(await reason('src/a.ts', 'write', c)).toBe('denied by policy p: path `src/a.ts` is not in `filesystem.write`');
  });

  it('does not let `*` or `**` match dot files unless the glob names the dot', async () => {
    expect(await reason('.hidden')).toBe('denied by policy .ai/config/policy.yaml: path `.hidden` is not in `filesystem.read` or `filesystem.write`');
    const dots = createPermissionContext(root, rules({ fsRead: ['.hidden', '.config/**'] }), 'policy p');
    expect((await checkPath(dots, '.hidden', 'read')).allowed).toBe(true);
    expect((await checkPath(dots, '.config/x.yaml', 'read')).allowed).toBe(true);
  });

  it('denies secret locations even where the globs allow them, unless allow_secret_paths names them in every context', async () => {
    const wide = createPermissionContext(root, rules({ fsRead: ['**', '.*', '.*/**', '**/.*', '**/.*/**'], fsWrite: ['**'] }), 'policy p');
    const cases: [string, RegExp][] = [
      ['.env', /path `.env` is an environment file, which tools may not touch unless `filesystem.allow_secret_paths` names it/],
      ['.env.production', /an environment file/],
      ['src/.env.local', /an environment file/],
      ['.git/config', /git metadata/],
      ['.git', /git metadata/],
      ['deploy/server.key', /a key or certificate/],
      ['certs/ca.pem', /a key or certificate/],
      ['home/.ssh/id_ed25519', /SSH keys/],
      ['id_rsa.pub', /an SSH key/],
      ['.npmrc', /a credentials file/],
      ['.ai/logs/audit/2026-11-23/x.jsonl', /the gateway's audit log/],
      ['.ai/vectors/tools.lance', /the gateway's tool index/],
      ['.ai/state/keys.json', /client keys/],
    ];
    for (const [path, pattern] of cases) {
      const decision = await checkPath(wide, path, 'read');
      expect(decision.allowed, path).toBe(false);
      expect(decision.allowed ? '' : decision.reason, path).toMatch(pattern);
    }
    expect((await checkPath(wide, 'src/environment.ts', 'read')).allowed).toBe(true);
    expect((await checkPath(wide, 'keys/readme.md', 'read')).allowed).toBe(true);
    // Granted explicitly: allowed, but only where every context in the chain grants it.
    const granted = createPermissionContext(root, rules({ fsRead: ['.env.example'], fsSecrets: ['.env.example'] }), 'policy p');
    expect((await checkPath(granted, '.env.example', 'read')).allowed).toBe(true);
    expect((await checkPath(granted, '.env', 'read')).allowed).toBe(false);
    const child = childContext(granted, rules({ fsRead: ['**', '.env.example'] }), 'client c');
    expect(await reason('.env.example', 'read', child)).toMatch(/^denied by client c: path `.env.example` is an environment file/);
  });

  it('matches globs against the real path, so a symlink cannot borrow a folder’s rights', async () => {
    expect(await reason('tmp/to-src', 'write')).toBe(
      'denied by policy .ai/config/policy.yaml: path `tmp/to-src` (`src/a.ts`) is not in `filesystem.write`',
    );
  });

  it('default deny: empty rules allow no path', async () => {
    const none = createPermissionContext(root, emptyRules(), 'policy p');
    expect(await reason('src/a.ts', 'read', none)).toBe('denied by policy p: path `src/a.ts` is not in `filesystem.read` or `filesystem.write`');
  });

  it('a child context cannot widen the parent’s globs', async () => {
    const child = childContext(ctx, rules({ fsWrite: ['**'] }), 'directive foo');
    expect(await reason('src/a.ts', 'write', child)).toBe(
      'denied by policy .ai/config/policy.yaml: path `src/a.ts` is not in `filesystem.write`',
    );
    const narrow = childContext(ctx, rules({ fsRead: ['src/**'] }), 'directive foo');
    expect(await reason('tmp/x', 'read', narrow)).toBe('denied by directive foo: path `tmp/x` is not in `filesystem.read` or `filesystem.write`');
  });
});

describe('checkPath: hostile input', () => {
  const outsideReason = (shown: string) => `denied by policy .ai/config/policy.yaml: path ${shown} resolves outside the project root`;

  it('denies ../x', async () => {
    expect(await reason('../x')).toBe(outsideReason('`../x`'));
  });

  it('denies foo/../../x', async () => {
    expect(await reason('foo/../../x')).toBe(outsideReason('`foo/../../x`'));
  });

  it('denies /etc/passwd and absolute paths into a sibling sharing the root’s name', async () => {
    expect(await reason('/etc/passwd')).toBe(outsideReason('`/etc/passwd`'));
    expect(await reason(`${root}-evil/x`)).toBe(outsideReason(`\`${root}-evil/x\``));
  });

  it('decodes %2e%2e/x before resolving', async () => {
    expect(await reason('%2e%2e/x')).toBe(outsideReason('`%2e%2e/x` (decodes to `../x`)'));
    expect(await reason('src/%2E%2E/%2e%2e/x')).toContain('resolves outside the project root');
    expect(await reason('..%2fx')).toBe(outsideReason('`..%2fx` (decodes to `../x`)'));
  });

  it('decodes double-encoded %252e%252e/x', async () => {
    expect(await reason('%252e%252e/x')).toBe(outsideReason('`%252e%252e/x` (decodes to `../x`)'));
  });

  it('denies a path that is only harmless once decoded, since raw and decoded name different files', async () => {
    expect(await reason('src/%61.ts')).toBe(
      'denied by policy .ai/config/policy.yaml: path `src/%61.ts` is percent-encoded (decodes to `src/a.ts`); the decoded and the raw text name different files, so write the path plainly',
    );
  });

  it('denies malformed and over-deep escapes', async () => {
    expect(await reason('src/100%.txt')).toBe(
      'denied by policy .ai/config/policy.yaml: path `src/100%.txt` has a `%` that is not a valid percent-escape; paths with a literal `%` are not accepted',
    );
    expect(await reason('%25zz')).toContain('not a valid percent-escape');
    expect(await reason('%2525252e%2525252e/x')).toBe(
      'denied by policy .ai/config/policy.yaml: path `%2525252e%2525252e/x` is percent-encoded more than 3 times over',
    );
  });

  it('denies NUL bytes, raw or encoded', async () => {
    expect(await reason('src/a.ts\0.png')).toBe('denied by policy .ai/config/policy.yaml: path "src/a.ts\\u0000.png" contains a NUL byte');
    expect(await reason('src/a.ts%00.png')).toBe(
      'denied by policy .ai/config/policy.yaml: path `src/a.ts%00.png` (decodes to "src/a.ts\\u0000.png") contains control characters',
    );
  });

  it('denies Windows-style tricks', async () => {
    expect(await reason('..\\x')).toBe('denied by policy .ai/config/policy.yaml: path `..\\x` contains a backslash; use `/` between folders');
    expect(await reason('src%5c..%5c..%5cx')).toContain('contains a backslash');
    expect(await reason('C:/Windows/system.ini')).toContain('starts with a drive letter');
  });

  it('denies a symlink inside the root that points outside', async () => {
    expect(await reason('src/leak')).toBe(
      'denied by policy .ai/config/policy.yaml: path `src/leak` leads outside the project root through a symbolic link',
    );
    expect(await reason('tmp/outdir/new-file', 'write')).toContain('leads outside the project root through a symbolic link');
  });

  it('denies writing through a dangling symlink (it would create the target outside)', async () => {
    expect(await reason('tmp/dangling', 'write')).toBe(
      'denied by policy .ai/config/policy.yaml: path `tmp/dangling`: `tmp/dangling` is a symbolic link whose target does not exist',
    );
    expect(await reason('tmp/dangling/x', 'write')).toContain('is a symbolic link whose target does not exist');
  });

  it('denies symlink loops and paths through a file', async () => {
    expect(await reason('tmp/loop-a')).toContain('is a symbolic link loop');
    expect(await reason('src/a.ts/x')).toContain('is a file, not a folder');
  });

  it('denies empty and over-long paths', async () => {
    expect(await reason('')).toBe('denied by policy .ai/config/policy.yaml: path is empty; name a file relative to the project root (`.` is the root)');
    expect(await reason('a/'.repeat(3000))).toContain('is longer than 4096 characters');
  });

  it('stops before starting when the signal has fired', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(checkPath(ctx, 'src/a.ts', 'read', ac.signal)).rejects.toMatchObject({ code: 'TOOL_CANCELLED' });
  });
});
