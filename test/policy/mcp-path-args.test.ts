import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkMcpPathArgs } from '../../src/policy/mcp-path-args.js';
import { createPermissionContext, emptyRules, type PermissionContext, type PermissionRules } from '../../src/policy/permission-context.js';

let base: string;
let root: string;
let ctx: PermissionContext;

const rules = (partial: Partial<PermissionRules>): PermissionRules => ({ ...emptyRules(), ...partial });

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'kiwi-mcp-paths-')));
  root = join(base, 'proj');
  await mkdir(join(root, 'src'), { recursive: true });
  await mkdir(join(root, 'out'), { recursive: true });
  await writeFile(join(root, 'src', 'a.ts'), 'export {};\n');
  await writeFile(join(root, '.env'), 'OPENAI_API_KEY=sk-live\n');
  await writeFile(join(base, 'outside.txt'), 'outside\n');
  await symlink(join(base, 'outside.txt'), join(root, 'src', 'link.txt'));
  ctx = createPermissionContext(root, rules({ fsRead: ['**'], fsWrite: ['out/**'], mcpPathArgs: { 'notes.*': ['note_location'] } }), 'policy .ai/config/policy.yaml');
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

async function denied(tool: string, args: Record<string, unknown>): Promise<string> {
  const d = await checkMcpPathArgs(ctx, tool, args);
  if (d.allowed) throw new Error(`expected a denial, got ${JSON.stringify(d.args)}`);
  return d.reason;
}

describe('checkMcpPathArgs', () => {
  it('denies secrets, traversal and symlinks out of the project in arguments named like paths', async () => {
    expect(await denied('files.read_text_file', { path: '.env' })).toMatch(/MCP tool `files.read_text_file`, argument `path`: denied by policy .* `.env` is an environment file/);
    expect(await denied('files.read_text_file', { path: '.git/config' })).toMatch(/git metadata/);
    expect(await denied('files.read_text_file', { path: '../outside.txt' })).toMatch(/resolves outside the project root/);
    expect(await denied('files.read_text_file', { path: '%2e%2e/outside.txt' })).toMatch(/outside the project root|percent-encoded/);
    expect(await denied('files.read_text_file', { path: 'src/link.txt' })).toMatch(/through a symbolic link/);
    expect(await denied('files.read_multiple_files', { paths: ['src/a.ts', '.env'] })).toMatch(/argument `paths\[1\]`/);
    expect(await denied('files.search_files', { directory: '/etc' })).toMatch(/outside the project root/);
  });

  it('checks file:// URIs wherever they are, and odd values in path arguments', async () => {
    expect(await denied('docs.fetch', { options: { input: pathToFileURL(join(root, '.env')).href } })).toMatch(/`options.input`.*environment file/);
    expect(await denied('docs.fetch', { input: 'file:///etc/passwd' })).toMatch(/outside the project root/);
    expect(await denied('files.read_text_file', { path: { nested: '.env' } })).toMatch(/names a path but is an object/);
    expect(await denied('files.read_text_file', { path: 42 })).toMatch(/names a path but is a number/);
  });

  it('needs write access for tools whose name says they change things', async () => {
    expect(await denied('files.write_file', { path: 'src/a.ts', content: 'x' })).toMatch(/is not in `filesystem.write`/);
    expect(await denied('files.move_file', { source: 'out/a', destination: 'src/b' })).toMatch(/argument `destination`/);
    const ok = await checkMcpPathArgs(ctx, 'files.write_file', { path: 'out/new.txt', content: 'x' });
    expect(ok).toEqual({ allowed: true, args: { path: join(root, 'out', 'new.txt'), content: 'x' } });
  });

  it('passes allowed paths on as the real absolute path that was checked, and leaves other arguments alone', async () => {
    const ok = await checkMcpPathArgs(ctx, 'files.read_text_file', { path: 'src/a.ts', head: 5, note: '.env is just text here' });
    expect(ok).toEqual({ allowed: true, args: { path: join(root, 'src', 'a.ts'), head: 5, note: '.env is just text here' } });
    const uri = await checkMcpPathArgs(ctx, 'docs.fetch', { input: pathToFileURL(join(root, 'src', 'a.ts')).href });
    expect(uri).toEqual({ allowed: true, args: { input: pathToFileURL(join(root, 'src', 'a.ts')).href } });
  });

  it('treats the arguments a policy declares for a tool as paths', async () => {
    expect(await denied('notes.open', { note_location: '.env' })).toMatch(/argument `note_location`/);
    expect(await checkMcpPathArgs(ctx, 'other.open', { note_location: '.env' })).toEqual({ allowed: true, args: { note_location: '.env' } });
  });
});
