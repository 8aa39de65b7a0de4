import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { detectBwrap } from '../../src/primitives/sandbox.js';
import { openProject, type Project } from '../../src/project.js';
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
  const outcome = await project.proxy.call({ tool: 'probe', args: {}, session: 'sandbox-test', client: 'test', source: 'cli' });
  if (outcome.status !== 'ok') throw new Error(`probe failed: ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.result.text) as { pid: number; granted: string; outside: string };
}

describe.runIf(hasBwrap)('subprocess tools through the proxy', () => {
  it('run sandboxed by default: own pid namespace, writes only in the policy write folders', async () => {
    const seen = await probe('');
    expect(seen.pid).toBeLessThan(10);
    expect(seen.granted).toBe('ok');
    expect(seen.outside).toMatch(/EROFS|EACCES/u);
    expect(readFileSync(`${temp?.root}/out/probe.txt`, 'utf8')).toBe('x');
    expect(existsSync(`${temp?.root}/probe.txt`)).toBe(false);
  });

  it('run unsandboxed with sandbox: off', async () => {
    const seen = await probe('sandbox: { mode: off }\n');
    expect(seen.pid).toBeGreaterThan(10);
    expect(seen.outside).toBe('ok');
  });
});
