import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { createContainerRunner } from '../../src/primitives/container.js';
import { openProject, type Project, type ProjectOptions } from '../../src/project/open-project.js';
import { createTempProject, REPO_ROOT, type TempProject } from '../helpers/temp-project.js';

const probe = await createContainerRunner({ warn: () => undefined }).availability();
if (!probe.ok && process.env.KIWI_REQUIRE_CONTAINERS === '1') throw new Error(`KIWI_REQUIRE_CONTAINERS=1 but containers do not run here: ${probe.reason}`);

// Reports where it runs: its pid, whether it sees the host's /root, whether it can write out/.
const PROBE = `import { existsSync, writeFileSync } from 'node:fs';
let wrote = 'ok';
try { writeFileSync('out/probe.txt', 'x'); } catch (e) { wrote = e.code; }
console.log(JSON.stringify({ pid: process.pid, hostRoot: existsSync('/root'), wrote }));
`;
const tool = (id: string, isolation: string | undefined) => `tool_id: ${id}
tool_type: script
executor: node_runtime
version: "1.0.0"
description: "Report where it runs"
mutates_state: false
${isolation ? `isolation: ${isolation}\n` : ''}config:
  script: probe.mjs
`;

const POLICY = `version: 1
tools: ["*"]
filesystem: { read: ["**"], write: ["out/**"] }
commands: [{ executable: node }]
`;

let temp: TempProject;
const projects: Project[] = [];

beforeAll(() => {
  temp = createTempProject();
  temp.write('.ai/tools/project/probe.mjs', PROBE);
  temp.write('out/.keep', '');
  for (const level of ['trusted', 'standard', 'sandboxed', 'restricted']) temp.write(`.ai/tools/project/${level}_probe.yaml`, tool(`${level}_probe`, level));
  temp.write('.ai/tools/project/plain_probe.yaml', tool('plain_probe', undefined));
  temp.write('.ai/tools/project/hungry_probe.yaml', `${tool('hungry_probe', 'restricted')}  container: { memory_mb: 4096 }\n`);
});

afterAll(async () => {
  await Promise.all(projects.map((p) => p.close()));
  temp.remove();
});

async function open(policyExtra: string, options: Partial<ProjectOptions> = {}): Promise<Project> {
  temp.write('.ai/config/policy.yaml', POLICY + policyExtra);
  const project = await openProject({ projectDir: temp.root, env: { PATH: process.env.PATH, HOME: process.env.HOME }, session: 'isolation-test', ...options });
  projects.push(project);
  return project;
}

const call = (project: Project, id: string) => project.proxy.call({ target: { tool: id, args: {} }, caller: { session: 'isolation-test', client: 'test', source: 'cli' } });

describe('the policy isolation floor', () => {
  it('keeps a trusted tool in the sandbox unless the policy lowers the floor', async () => {
    const outcome = await call(await open(''), 'trusted_probe');
    expect(outcome.status === 'denied' && outcome.reason).toMatch(/trusted_probe runs at isolation trusted, below the standard that isolation\.minimum requires/u);
  });

  let project: Project;
  beforeAll(async () => {
    project = await open('isolation: { minimum: standard, per_tool: { "restricted_*": restricted, "sandboxed_*": restricted } }\n', { containers: { podman: '/nonexistent/kiwi-podman' } });
  });

  it('refuses a tool below the minimum, saying what to change', async () => {
    const outcome = await call(project, 'trusted_probe');
    expect(outcome).toMatchObject({ status: 'denied' });
    expect(outcome.status === 'denied' && outcome.reason).toBe(
      'policy .ai/config/policy.yaml: trusted_probe runs at isolation trusted, below the standard that isolation.minimum requires; set `isolation: standard` (or higher) in the tool\'s manifest, or lower isolation.minimum',
    );
  });

  it('refuses a tool below its per-tool minimum', async () => {
    const outcome = await call(project, 'sandboxed_probe');
    expect(outcome.status === 'denied' && outcome.reason).toMatch(/sandboxed_probe runs at isolation sandboxed, below the restricted that isolation\.per_tool\["sandboxed_\*"\] requires/u);
  });

  it('refuses a container tool where containers do not run, and runs nothing', async () => {
    const outcome = await call(project, 'restricted_probe');
    expect(outcome.status === 'denied' && outcome.reason).toMatch(/^restricted_probe runs at isolation restricted, in a container, and containers do not run here: \/nonexistent\/kiwi-podman was not found .*apt-get install podman runc/u);
    await project.audit.flush();
    const [record] = await readAuditTail({ dir: project.auditDir, limit: 1 });
    expect(record).toMatchObject({ tool: 'restricted_probe', decision: 'deny' });
  });
});

describe('each level runs where it says', () => {
  let project: Project;
  beforeAll(async () => {
    project = await open('isolation: { minimum: trusted }\n');
  });

  it('trusted: a plain subprocess of the host', async () => {
    const outcome = await call(project, 'trusted_probe');
    expect(outcome.status === 'ok' && JSON.parse(outcome.result.text)).toMatchObject({ hostRoot: true, wrote: 'ok' });
  });

  it('a tool without the field runs as before', async () => {
    const outcome = await call(project, 'plain_probe');
    expect(outcome).toMatchObject({ status: 'ok' });
  });

  it.runIf(probe.ok)('restricted: in a container, writing only where the policy lets it, recorded as podman', async () => {
    const outcome = await call(project, 'restricted_probe');
    expect(outcome.status === 'ok' && JSON.parse(outcome.result.text)).toMatchObject({ pid: 1, hostRoot: false, wrote: 'ok' });
    await project.audit.flush();
    const [record] = await readAuditTail({ dir: project.auditDir, limit: 1 });
    expect(record).toMatchObject({ tool: 'restricted_probe', decision: 'allow', sandbox: 'podman', sandbox_reason: 'isolation: restricted' });
  });

  it('a tool that asks for more memory than the policy allows is refused', async () => {
    const outcome = await call(project, 'hungry_probe');
    if (!probe.ok) return expect(outcome).toMatchObject({ status: 'denied' });
    expect(outcome.status === 'denied' && outcome.reason).toMatch(/hungry_probe asks for config\.container\.memory_mb: 4096, more than the policy's isolation\.container\.memory_mb \(512\)/u);
  });
});

describe("the demo's container tool", () => {
  let demo: string;
  beforeAll(() => {
    demo = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-demo-isolation-')));
    for (const dir of ['tools', 'config']) cpSync(path.join(REPO_ROOT, '.ai', dir), path.join(demo, '.ai', dir), { recursive: true });
    writeFileSync(path.join(demo, 'notes.txt'), 'kiwi\n');
  });
  afterAll(() => rmSync(demo, { recursive: true, force: true }));

  const digest = async (options: Partial<ProjectOptions>) => {
    const project = await openProject({ projectDir: demo, env: { PATH: process.env.PATH, HOME: process.env.HOME }, session: 'demo-isolation', ...options });
    projects.push(project);
    return project.proxy.call({ target: { tool: 'file_digest', args: { path: 'notes.txt' } }, caller: { session: 'demo-isolation', client: 'test', source: 'cli' } });
  };

  it('is refused with the reason where podman is missing', async () => {
    const outcome = await digest({ containers: { podman: '/nonexistent/kiwi-podman' } });
    expect(outcome.status === 'denied' && outcome.reason).toMatch(/^file_digest runs at isolation restricted, in a container, and containers do not run here: .*apt-get install podman runc/u);
  });

  it.runIf(probe.ok)('runs in a container where podman is there', async () => {
    const outcome = await digest({});
    expect(outcome.status === 'ok' && JSON.parse(outcome.result.text)).toMatchObject({ sha256: createHash('sha256').update('kiwi\n').digest('hex'), bytes: 5 });
  });
});
