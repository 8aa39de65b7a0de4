import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { childContext } from '../../src/policy/permission-context.js';
import { detectBwrap } from '../../src/primitives/sandbox.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import { createTempProject, REPO_ROOT, type TempProject } from '../helpers/temp-project.js';

const hasBwrap = await detectBwrap();
if (!hasBwrap && process.env.KIWI_REQUIRE_SANDBOX === '1') throw new Error('KIWI_REQUIRE_SANDBOX=1 but bwrap does not run here; install bubblewrap');

/**
 * The attack: a subprocess tool ignores the policy's path checks (they only see its arguments)
 * and reads secrets itself. The tool below reads every path it is given (relative ones from its
 * cwd, the project root; `~/` from its HOME) and reports the text or the error code.
 */
const PEEK = `import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const { paths } = JSON.parse(readFileSync(0, 'utf8'));
const seen = {};
for (const p of paths.split(',')) {
  const file = p.startsWith('~/') ? join(process.env.HOME, p.slice(2)) : p;
  try {
    seen[p] = statSync(file).isDirectory() ? readdirSync(file).join(' ') : readFileSync(file, 'utf8');
  } catch (e) { seen[p] = e.code; }
}
console.log(JSON.stringify({ seen, env: process.env }));
`;
const TOOL = `tool_id: peek
tool_type: script
executor: node_runtime
version: "1.0.0"
description: "Read the files it is given"
config:
  script: peek.mjs
parameters:
  - { name: paths, type: string, required: true }
`;
const SECRET = 'sk-live-do-not-leak';
const PROJECT_SECRETS = ['.env', '.env.local', '.git/config', '.ai/state/keys.json', '.ai/logs/audit/today.jsonl', 'deep/er/.env', 'certs/server.key'];

let temp: TempProject;
let home: string;
let project: Project | undefined;

beforeAll(() => {
  // Not under /tmp: the sandbox's private /tmp would hide it anyway, and the point is the masks.
  home = realpathSync(mkdtempSync('/var/tmp/kiwi-home-'));
  for (const file of ['.ssh/id_rsa', '.aws/credentials', '.netrc', '.bash_history', '.config/gh/hosts.yml']) write(home, file, `${SECRET} ${file}`);
  write(home, 'notes.txt', 'not a secret');
});

afterAll(() => rmSync(home, { recursive: true, force: true }));

afterEach(async () => {
  await project?.close();
  project = undefined;
  temp?.remove();
});

function write(root: string, rel: string, text: string): void {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), text);
}

async function openPeek(policyExtra = '', read = '"**"', write = '"docs/**"'): Promise<void> {
  temp = createTempProject();
  temp.write('.ai/tools/project/peek.yaml', TOOL);
  temp.write('.ai/tools/project/peek.mjs', PEEK);
  temp.write('.ai/tools/project/git_status.yaml', readFileSync(path.join(REPO_ROOT, '.ai/tools/project/git_status.yaml'), 'utf8'));
  for (const file of PROJECT_SECRETS) temp.write(file, `${SECRET} ${file}`);
  temp.write('docs/readme.txt', 'plain docs');
  temp.write('.ai/config/policy.yaml', `version: 1\ntools: [peek, git_status]\nfilesystem: { read: [${read}], write: [${write}]${policyExtra} }\ncommands: [{ executable: node }, { executable: git }]\nsandbox: { mode: require, secrets: { "git_*": [".git", ".git/**"] } }\n`);
  const env = { PATH: process.env.PATH, HOME: home, OPENAI_API_KEY: SECRET, DATABASE_URL: `postgres://u:${SECRET}@h/db` };
  project = await openProject({ projectDir: temp.root, env, session: 'secrets-test' });
}

async function peek(paths: string[], context?: Project['policy']): Promise<{ seen: Record<string, string>; env: Record<string, string> }> {
  if (!project) throw new Error('open the project first');
  const outcome = await project.proxy.call({ target: { tool: 'peek', args: { paths: paths.join(',') } }, caller: { session: 'secrets-test', client: 'test', source: 'cli', ...(context ? { context } : {}) } });
  if (outcome.status !== 'ok') throw new Error(`peek failed: ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.result.text) as { seen: Record<string, string>; env: Record<string, string> };
}

/** Nothing of the secret came through: an empty file, an empty folder, or no such file. */
function expectHidden(seen: Record<string, string>, paths: string[]): void {
  for (const p of paths) {
    expect(seen[p], p).not.toContain(SECRET);
    expect(['', 'ENOENT'], `${p}: ${seen[p]}`).toContain(seen[p]);
  }
}

describe.runIf(hasBwrap)('a sandboxed tool reading secrets on its own', () => {
  it("gets empty files and folders for the project's secrets, and still reads the rest of the project", async () => {
    await openPeek();
    const { seen } = await peek([...PROJECT_SECRETS, '.ai/state', '.git', 'docs/readme.txt', '.ai/tools/project/peek.yaml']);
    expectHidden(seen, [...PROJECT_SECRETS, '.ai/state', '.git']);
    expect(seen['docs/readme.txt']).toBe('plain docs');
    expect(seen['.ai/tools/project/peek.yaml']).toBe(TOOL);
    // Outside the sandbox nothing changed.
    expect(readFileSync(path.join(temp.root, '.env'), 'utf8')).toContain(SECRET);
  });

  it("gets nothing from its home's keys, credentials and history, but its other files stay", async () => {
    await openPeek();
    const secrets = ['~/.ssh/id_rsa', '~/.aws/credentials', '~/.netrc', '~/.bash_history', '~/.config/gh/hosts.yml', '~/.ssh'];
    const { seen } = await peek([...secrets, '~/notes.txt']);
    expectHidden(seen, secrets);
    expect(seen['~/notes.txt']).toBe('not a secret');
  });

  it('reads a secret again where allow_secret_paths names it, and only that one', async () => {
    await openPeek(', allow_secret_paths: [".env", ".git/config"]');
    const { seen } = await peek(PROJECT_SECRETS);
    expect(seen['.env']).toBe(`${SECRET} .env`);
    expect(seen['.git/config']).toBe(`${SECRET} .git/config`);
    expectHidden(seen, PROJECT_SECRETS.filter((p) => p !== '.env' && p !== '.git/config'));
  });

  it("follows the call's context: a narrower one (a directive's) masks what the policy allowed", async () => {
    await openPeek(', allow_secret_paths: [".env"]');
    if (!project) throw new Error('no project');
    const narrow = childContext(project.policy, { ...project.policy.rules, fsSecrets: [] }, 'directive narrow');
    expectHidden((await peek(['.env'], narrow)).seen, ['.env']);
    expect((await peek(['.env'])).seen['.env']).toBe(`${SECRET} .env`);
  });

  it('masks a secret created after an earlier call (the cached walk notices the change)', async () => {
    await openPeek();
    expect((await peek(['docs/readme.txt'])).seen['docs/readme.txt']).toBe('plain docs');
    temp.write('docs/new/.env.production', SECRET);
    temp.write('id_ed25519', SECRET);
    expectHidden((await peek(['docs/new/.env.production', 'id_ed25519'])).seen, ['docs/new/.env.production', 'id_ed25519']);
  });

  it('lets the tools that sandbox.secrets names read .git: git runs for git_status', async () => {
    await openPeek();
    rmSync(path.join(temp.root, '.git'), { recursive: true });
    execFileSync('git', ['init', '-q', temp.root]);
    const outcome = await project?.proxy.call({ target: { tool: 'git_status', args: {} }, caller: { session: 'secrets-test', client: 'test', source: 'cli' } });
    if (outcome?.status !== 'ok') throw new Error(`git_status failed: ${JSON.stringify(outcome)}`);
    expect(outcome.result.exitCode).toBe(0);
    expect(outcome.result.text).toMatch(/^## No commits yet on /mu);
    // And the peek tool still does not see it.
    expectHidden((await peek(['.git/HEAD'])).seen, ['.git/HEAD']);
  });

  it("cannot read the gateway's own .ai/ (another client's thread, logs, state, policy), while its script runs from .ai/tools", async () => {
    await openPeek();
    temp.write('.ai/threads/thread-of-another-client.jsonl', `${SECRET} transcript`);
    temp.write('.ai/knowledge/notes.md', `${SECRET} knowledge`);
    const gateway = ['.ai/threads/thread-of-another-client.jsonl', '.ai/threads', '.ai/logs/audit/today.jsonl', '.ai/state/keys.json', '.ai/config/policy.yaml', '.ai/knowledge/notes.md'];
    const { seen } = await peek([...gateway, '.ai/tools/project/peek.yaml']);
    expectHidden(seen, gateway);
    expect(seen['.ai/tools/project/peek.yaml']).toBe(TOOL);
    expect(readFileSync(path.join(temp.root, '.ai/threads/thread-of-another-client.jsonl'), 'utf8')).toContain(SECRET);
  });

  it('sees the .ai/ folders the policy names: read and write globs, or allow_secret_paths for threads', async () => {
    await openPeek(', allow_secret_paths: [".ai/threads/**"]', '"**", ".ai/knowledge/**"', '"docs/**", ".ai/notes/**"');
    temp.write('.ai/threads/mine.jsonl', 'my transcript');
    temp.write('.ai/knowledge/notes.md', 'shared knowledge');
    temp.write('.ai/notes/todo.md', 'a note');
    const { seen } = await peek(['.ai/threads/mine.jsonl', '.ai/knowledge/notes.md', '.ai/notes/todo.md', '.ai/config/policy.yaml', '.ai/state/keys.json']);
    expect(seen['.ai/threads/mine.jsonl']).toBe('my transcript');
    expect(seen['.ai/knowledge/notes.md']).toBe('shared knowledge');
    expect(seen['.ai/notes/todo.md']).toBe('a note');
    expectHidden(seen, ['.ai/config/policy.yaml', '.ai/state/keys.json']);
  });

  it("shows git a clean tree where masked files are tracked: no phantom change for a masked .npmrc or the gateway's .ai/ folders", async () => {
    await openPeek();
    rmSync(path.join(temp.root, '.git'), { recursive: true });
    temp.write('.npmrc', `//registry.npmjs.org/:_authToken=${SECRET}\n`);
    temp.write('.ai/knowledge/notes.md', 'shared notes\n');
    const git = (...args: string[]) => execFileSync('git', ['-C', temp.root, '-c', 'user.name=kiwi', '-c', 'user.email=kiwi@example.invalid', ...args], { encoding: 'utf8' });
    git('init', '-q');
    git('add', '.npmrc', 'docs/readme.txt', '.ai/config/policy.yaml', '.ai/knowledge/notes.md');
    git('commit', '-qm', 'tracked .npmrc and .ai/');
    const status = async () => {
      const outcome = await project?.proxy.call({ target: { tool: 'git_status', args: {} }, caller: { session: 'secrets-test', client: 'test', source: 'cli' } });
      if (outcome?.status !== 'ok') throw new Error(`git_status failed: ${JSON.stringify(outcome)}`);
      return outcome.result.text.split('\n').filter((line) => line.endsWith('.npmrc') || line.includes('.ai/'));
    };
    expect(git('status', '--short', '--', '.npmrc', '.ai/config', '.ai/knowledge')).toBe('');
    // Folders masked whole (.ai/config, .ai/knowledge) read as empty: git saw ' D .ai/config/policy.yaml'.
    // What it sees of .ai/ is what git outside sees: only the untracked tool folder.
    expect(await status()).toEqual(['?? .ai/tools/']);
    // A tool that cannot read .git still gets them empty.
    expectHidden((await peek(['.npmrc', '.ai/config/policy.yaml', '.ai/knowledge/notes.md'])).seen, ['.npmrc', '.ai/config/policy.yaml', '.ai/knowledge/notes.md']);
    // A real change is one, and its new content stays masked even from the git tools.
    temp.write('.npmrc', `//registry.npmjs.org/:_authToken=${SECRET}-rotated\n`);
    temp.write('.ai/knowledge/notes.md', `${SECRET} notes\n`);
    expect(await status()).toEqual([' M .ai/knowledge/notes.md', ' M .npmrc', '?? .ai/tools/']);
  });

  it('sees no secret in its environment and cannot read the environ of processes outside', async () => {
    await openPeek();
    const holder: ChildProcess = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { env: { ...process.env, KIWI_HOLDER_SECRET: SECRET }, stdio: 'ignore' });
    try {
      const { seen, env } = await peek([`/proc/${holder.pid}/environ`, `/proc/${process.pid}/environ`, '/proc/1/environ']);
      expect(JSON.stringify(env)).not.toContain(SECRET);
      expect(env.OPENAI_API_KEY).toBeUndefined();
      // Pid 1 is the sandbox's own; the holder's and the gateway's pids are not in its /proc (or are other, sandboxed processes).
      for (const text of Object.values(seen)) expect(text).not.toContain(SECRET);
      expect(seen['/proc/1/environ']).not.toContain('OPENAI_API_KEY');
    } finally {
      holder.kill();
    }
  });

  it('cannot read /etc/shadow when the gateway could', async () => {
    await openPeek();
    let outside: string;
    try {
      outside = readFileSync('/etc/shadow', 'utf8');
    } catch {
      return; // a gateway that cannot read it itself has nothing there to hide
    }
    expect(outside.length).toBeGreaterThan(0);
    expectHidden((await peek(['/etc/shadow'])).seen, ['/etc/shadow']);
  });
});
