import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../../src/app/gateway-config.js';
import { runCli } from '../../../src/app/run-cli.js';
import { INIT_FILES } from '../../../src/cli/init-templates.js';
import { validateChains } from '../../../src/executor/chain.js';
import { openProject } from '../../../src/project/open-project.js';

let base: string;
let dir: string;
let env: Record<string, string | undefined>;

async function kiwi(argv: string[], cwd = dir): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env, cwd, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const read = (relative: string): string => readFileSync(path.join(dir, relative), 'utf8');
const write = (relative: string, text: string): void => {
  mkdirSync(path.dirname(path.join(dir, relative)), { recursive: true });
  writeFileSync(path.join(dir, relative), text);
};

/** What a user writes for their own Python script: a manifest beside it, and the script. */
function writeUserTool(): void {
  write(
    '.ai/tools/shout.yaml',
    'tool_id: shout\ntool_type: script\nexecutor: python_runtime\nversion: "1.0.0"\ndescription: "Say a text louder"\nmutates_state: false\nconfig: { script: shout.py }\nparameters:\n  - { name: text, type: string, required: true }\n',
  );
  write('.ai/tools/shout.py', 'import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({"loud": args["text"].upper() + "!"}))\n');
}

/** The one edit the next steps ask for: the tool's id in the policy's `tools:`. */
function allowInPolicy(id: string): void {
  const policy = read('.ai/config/policy.yaml');
  expect(policy).toMatch(/^tools: \[\]/m);
  write('.ai/config/policy.yaml', policy.replace(/^tools: \[\]/m, `tools: [${id}]`));
}

function git(...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, encoding: 'utf8', env: { PATH: process.env['PATH'], HOME: base, GIT_CONFIG_NOSYSTEM: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
}

beforeEach(() => {
  base = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-init-')));
  dir = path.join(base, 'project');
  mkdirSync(dir);
  env = { PATH: process.env['PATH'], HOME: base, KIWI_USER_DIR: path.join(base, 'no-user-tier') };
});

afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('kiwi init', () => {
  it('makes the config, a default-deny policy, the runtimes and a .gitignore in an empty folder, and says what is next', async () => {
    const r = await kiwi(['init']);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toBe('');
    for (const file of INIT_FILES) {
      expect(read(file.path)).toBe(file.text);
      expect(r.out).toMatch(new RegExp(`^  made  ${file.path.replace(/\./g, '\\.')} `, 'm'));
    }
    expect(INIT_FILES.map((f) => f.path)).toEqual(
      expect.arrayContaining(['.ai/config/gateway.yaml', '.ai/config/policy.yaml', '.ai/tools/runtimes/python_runtime.yaml', '.ai/.gitignore']),
    );
    expect(r.out).not.toMatch(/kept/);
    expect(r.out).toMatch(/Next steps:[\s\S]*executor: python_runtime[\s\S]*`tools:` in \.ai\/config\/policy\.yaml[\s\S]*kiwi serve/);
  });

  it('makes DIR when given one, and refuses a file', async () => {
    const r = await kiwi(['init', 'new/app']);
    expect(r.code, r.err).toBe(0);
    expect(existsSync(path.join(dir, 'new', 'app', '.ai', 'config', 'policy.yaml'))).toBe(true);
    expect(r.out).toContain('kiwi tools validate --project new/app');
    write('a-file', 'x');
    expect(await kiwi(['init', 'a-file'])).toMatchObject({ code: 2, err: expect.stringContaining('is not a folder') });
  });

  it('overwrites nothing: a second run keeps every file, and a file of the user is kept while the rest is made', async () => {
    write('.ai/config/policy.yaml', 'version: 1\ntools: [mine]\n');
    const first = await kiwi(['init']);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/^ {2}kept {2}\.ai\/config\/policy\.yaml +already there, not changed$/m);
    expect(first.out).toMatch(/^ {2}made {2}\.ai\/config\/gateway\.yaml/m);
    expect(read('.ai/config/policy.yaml')).toBe('version: 1\ntools: [mine]\n');

    write('.ai/config/gateway.yaml', 'port: 9999\n');
    const second = await kiwi(['init']);
    expect(second.code).toBe(0);
    expect(second.out).toMatch(/already has every file kiwi init writes; nothing changed/);
    expect(second.out).not.toMatch(/^ {2}made/m);
    for (const file of INIT_FILES) expect(second.out).toMatch(new RegExp(`^  kept  ${file.path.replace(/\./g, '\\.')} `, 'm'));
    expect(read('.ai/config/gateway.yaml')).toBe('port: 9999\n');
    expect(read('.ai/config/policy.yaml')).toBe('version: 1\ntools: [mine]\n');
  });

  it('answers --help with its page, running nothing', async () => {
    const r = await kiwi(['init', '--help']);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(/^USAGE\n {2}kiwi init \[DIR\]/m);
    expect(readdirSync(dir)).toEqual([]);
    expect((await kiwi(['--help'])).out).toMatch(/^ {2}init +make a working \.ai\/ here/m);
  });
});

describe('the project kiwi init makes', () => {
  it('loads cleanly, and its gateway.yaml says the defaults', async () => {
    expect((await kiwi(['init'])).code).toBe(0);
    const project = await openProject({ projectDir: dir, userDir: path.join(base, 'no-user-tier'), env });
    try {
      expect(project.registry.errors).toEqual([]);
      expect([...project.registry.tools.keys()].sort()).toEqual(['bash_runtime', 'node_runtime', 'python_runtime']);
      expect(validateChains(project.registry.tools)).toEqual([]);
      expect(project.policy.rules.tools).toEqual([]);
    } finally {
      await project.close();
    }
    const ctx = { env: {}, root: dir };
    const written = await loadGatewayConfig(path.join(dir, '.ai', 'config', 'gateway.yaml'), ctx);
    const defaults = await loadGatewayConfig(path.join(dir, 'no-such-gateway.yaml'), ctx);
    expect(written.fromFile).toBe(true);
    const { file: _a, fromFile: _b, ...fromTemplate } = written;
    const { file: _c, fromFile: _d, ...builtIn } = defaults;
    expect(fromTemplate).toEqual(builtIn);
  });

  it("runs the user's own Python script once it is allowed, the way `kiwi run` does (denied before)", async () => {
    expect((await kiwi(['init'])).code).toBe(0);
    writeUserTool();
    expect(await kiwi(['tools', 'validate'])).toMatchObject({ code: 0, err: expect.stringMatching(/ok: 4 tools, .*all valid/) });

    const denied = await kiwi(['run', 'shout', '--args', '{"text": "hi"}']);
    expect(denied).toMatchObject({ code: 3, err: expect.stringContaining('tool `shout` is not in `tools`') });

    allowInPolicy('shout');
    const ran = await kiwi(['run', 'shout', '--args', '{"text": "hi"}', '--json']);
    expect(ran.code, ran.err).toBe(0);
    expect(JSON.parse(ran.out)).toMatchObject({ status: 'ok', result: { data: { loud: 'HI!' } } });
  });

  it('keeps what the gateway generates out of git, and nothing the user writes', async () => {
    git('init', '-q', '.');
    expect((await kiwi(['init'])).code).toBe(0);
    writeUserTool();
    allowInPolicy('shout');
    expect((await kiwi(['run', 'shout', '--args', '{"text": "hi"}'])).code).toBe(0);
    expect(existsSync(path.join(dir, '.ai', 'logs', 'audit'))).toBe(true);

    // What a user sees after a call: only what they (and init) wrote, the audit log written by the call ignored.
    const status = git('status', '--porcelain', '--untracked-files=all').split('\n').filter(Boolean).map((l) => l.slice(3)).sort();
    expect(status).toEqual([...INIT_FILES.map((f) => f.path), '.ai/tools/shout.py', '.ai/tools/shout.yaml'].sort());

    // Where `kiwi serve` and the other commands write (the embedded database, keys, budgets, index, threads).
    const generated = [
      '.ai/state/kernel/PG_VERSION',
      '.ai/state/kernel.lock',
      '.ai/state/keys.json',
      '.ai/state/budgets/2030-01-01.json',
      '.ai/logs/audit/2030-01-01/session.jsonl',
      '.ai/vectors/tools.lance/data.lance',
      '.ai/vectors/tools.meta.json',
      '.ai/threads/thread-1.json',
    ];
    for (const file of generated) write(file, 'x');
    expect(git('check-ignore', ...generated).split('\n').filter(Boolean)).toEqual(generated);
    expect(git('status', '--porcelain', '--untracked-files=all').split('\n').filter(Boolean)).toHaveLength(status.length);
    // Anchored to .ai/: a tools folder that happens to be called logs is still the user's.
    write('.ai/tools/logs/tail.yaml', 'x');
    expect(() => git('check-ignore', '.ai/tools/logs/tail.yaml', '.ai/config/policy.yaml')).toThrow();
  });
});

describe('a folder with no .ai/', () => {
  it('`kiwi serve` (and other project commands) say to run `kiwi init`, creating nothing', async () => {
    for (const argv of [['serve'], ['run', 'shout'], ['tools', 'list'], ['index']]) {
      const r = await kiwi(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err).toBe(`kiwi ${argv[0]}: the working folder ${dir} has no .ai/ folder, so it is not a Kiwi project yet: run \`kiwi init\` to make one (config, a default-deny policy, the script runtimes), or point --project at the folder that holds .ai/`);
    }
    const other = await kiwi(['serve', '--project', dir], base);
    expect(other.err).toContain(`run \`kiwi init ${dir}\` to make one`);
    expect(readdirSync(dir)).toEqual([]);
  });
});
