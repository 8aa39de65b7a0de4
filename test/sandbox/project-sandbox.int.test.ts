import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { detectBwrap } from '../../src/primitives/sandbox.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import { createTempProject, type TempProject } from '../helpers/temp-project.js';

const hasBwrap = await detectBwrap();
if (!hasBwrap && process.env.KIWI_REQUIRE_SANDBOX === '1') throw new Error('KIWI_REQUIRE_SANDBOX=1 but bwrap does not run here; install bubblewrap');

// A node script tool that reports its pid and tries one write inside the granted folder and one outside.
const PROBE = `import { writeFileSync } from 'node:fs';
const attempt = (file) => { try { writeFileSync(file, 'x'); return 'ok'; } catch (e) { return e.code; } };
console.log(JSON.stringify({ pid: process.pid, granted: attempt('out/probe.txt'), outside: attempt('probe.txt') }));
`;
const TOOL = `tool_id: probe
tool_type: script
executor: node_runtime
version: "1.0.0"
description: "Report the pid and try two writes"
config:
  script: probe.mjs
parameters: []
`;

let temp: TempProject | undefined;
let project: Project | undefined;

afterEach(async () => {
  await project?.close();
  temp?.remove();
  project = undefined;
  temp = undefined;
});

async function probe(sandboxYaml: string): Promise<{ pid: number; granted: string; outside: string }> {
  temp = createTempProject();
  temp.write('.ai/tools/project/probe.yaml', TOOL);
  temp.write('.ai/tools/project/probe.mjs', PROBE);
  temp.write('out/.keep', '');
  temp.write('.ai/config/policy.yaml', `version: 1\ntools: [probe]\nfilesystem: { read: ["**"], write: ["out/**"] }\ncommands: [{ executable: node }]\n${sandboxYaml}`);
  project = await openProject({ projectDir: temp.root, env: { PATH: process.env.PATH, HOME: process.env.HOME }, session: 'sandbox-test' });
  const outcome = await project.proxy.call({ target: { tool: 'probe', args: {} }, caller: { session: 'sandbox-test', client: 'test', source: 'cli' } });
  if (outcome.status !== 'ok') throw new Error(`probe failed: ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.result.text) as { pid: number; granted: string; outside: string };
}

/** The audit records of the calls made so far, as written to disk. */
async function auditRecords() {
  if (!project) throw new Error('open the project first');
  await project.audit.flush();
  return readAuditTail({ dir: project.auditDir, limit: 100 });
}

describe.runIf(hasBwrap)('subprocess tools through the proxy', () => {
  it('run sandboxed by default: own pid namespace, writes only in the policy write folders', async () => {
    const seen = await probe('');
    expect(seen.pid).toBeLessThan(10);
    expect(seen.granted).toBe('ok');
    expect(seen.outside).toMatch(/EROFS|EACCES/u);
    expect(readFileSync(`${temp?.root}/out/probe.txt`, 'utf8')).toBe('x');
    expect(existsSync(`${temp?.root}/probe.txt`)).toBe(false);
    const [record] = await auditRecords();
    expect(record).toMatchObject({ tool: 'probe', decision: 'allow', sandbox: 'bwrap' });
    expect(record?.sandbox_reason).toBeUndefined();
  });

  it('run unsandboxed with sandbox: off', async () => {
    const seen = await probe('sandbox: { mode: off }\n');
    expect(seen.pid).toBeGreaterThan(10);
    expect(seen.outside).toBe('ok');
    const [record] = await auditRecords();
    expect(record).toMatchObject({ tool: 'probe', decision: 'allow', sandbox: 'none', sandbox_reason: 'sandbox: off in the policy' });
  });
});

describe('audit records say how the call was isolated', () => {
  it('none, and why, when bwrap is missing at start (sandbox: auto)', async () => {
    const seen = await probe('sandbox: { mode: auto, bwrap: /nonexistent/kiwi-bwrap }\n');
    expect(seen.outside).toBe('ok');
    const [record] = await auditRecords();
    expect(record).toMatchObject({ tool: 'probe', sandbox: 'none', sandbox_reason: '/nonexistent/kiwi-bwrap was not found' });
  });

  it('none, and why, for a call refused under sandbox: require', async () => {
    const error = await probe('sandbox: { mode: require, bwrap: /nonexistent/kiwi-bwrap }\n').catch((e: unknown) => e);
    expect(String(error)).toMatch(/SPAWN_FAILED/u);
    const [record] = await auditRecords();
    expect(record).toMatchObject({ tool: 'probe', error: { code: 'SPAWN_FAILED' }, sandbox: 'none' });
    expect(record?.sandbox_reason).toMatch(/^sandbox: require is set, and the sandbox does not run here \(\/nonexistent\/kiwi-bwrap was not found\)/u);
  });

  it('none, nothing ran, for a call the policy refused', async () => {
    await probe('').catch(() => undefined);
    const outcome = await project?.proxy.call({ target: { tool: 'not_granted', args: {} }, caller: { session: 'sandbox-test', client: 'test', source: 'cli' } });
    expect(outcome?.status).not.toBe('ok');
    const records = await auditRecords();
    expect(records.at(-1)).toMatchObject({ tool: 'not_granted', decision: 'deny', sandbox: 'none', sandbox_reason: 'nothing ran' });
  });
});
