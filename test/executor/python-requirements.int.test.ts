import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveChain } from '../../src/executor/chain.js';
import { executePlan } from '../../src/executor/execute-plan.js';
import { planCall } from '../../src/executor/plan.js';
import { isKiwiError } from '../../src/base/errors.js';
import { createMcpClientPool } from '../../src/mcp-client/client-pool.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { createRequirementCheck } from '../../src/primitives/python-requirements.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import type { Tool } from '../../src/registry/types.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

/**
 * A Python tool's `config.requires` checked by the real python3 before the tool runs, against
 * packages "installed" as dist-info folders on a temp PYTHONPATH (importlib.metadata reads them
 * as pip's): a satisfied set runs the script, a missing or too old package refuses the call
 * before the script starts, saying what to install.
 */
const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-py-requires-')));
const site = path.join(dir, 'site');
const pool = createMcpClientPool();
afterAll(async () => {
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
});

function install(name: string, version: string): void {
  const info = path.join(site, `${name.replace(/-/g, '_')}-${version}.dist-info`);
  mkdirSync(info, { recursive: true });
  writeFileSync(path.join(info, 'METADATA'), `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`);
}
const uninstall = (name: string, version: string): void => rmSync(path.join(site, `${name.replace(/-/g, '_')}-${version}.dist-info`), { recursive: true, force: true });

const manifest = (file: string): Tool => {
  const parsed = parseToolManifest(readFileSync(path.join(REPO_ROOT, '.ai/tools', file), 'utf8'), { file: path.join(REPO_ROOT, '.ai/tools', file), display: file }, 'project');
  if (!parsed.ok) throw new Error(parsed.issues.map((i) => i.message).join('\n'));
  return parsed.value;
};
const RUNTIMES = [manifest('primitives/subprocess.yaml'), manifest('runtimes/python_runtime.yaml'), manifest('runtimes/node_runtime.yaml')];

/** A script tool on `runtime` whose script leaves a mark when it runs. */
function pythonTool(id: string, requires: string[], version = '1.0.0', runtime = 'python_runtime'): Tool {
  writeFileSync(path.join(dir, `${id}.py`), `import json, sys\nopen(${JSON.stringify(path.join(dir, `${id}.ran`))}, 'w').write('ran')\nprint(json.dumps({'ok': json.load(sys.stdin)}))\n`);
  const text = `tool_id: ${id}\ntool_type: script\nexecutor: ${runtime}\nversion: "${version}"\nconfig:\n  entrypoint: ${id}.py\n  env: { PYTHONPATH: ${JSON.stringify(site)} }\n  requires: [${requires.map((r) => JSON.stringify(r)).join(', ')}]\n`;
  const parsed = parseToolManifest(text, { file: path.join(dir, `${id}.yaml`), display: `${id}.yaml` }, 'project');
  if (!parsed.ok) throw new Error(parsed.issues.map((i) => i.message).join('\n'));
  return parsed.value;
}

const deps = { http: createHttpClient(), mcp: pool, requirements: createRequirementCheck() };
const ctx = { root: dir, env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' } };
const run = (tool: Tool) => executePlan(planCall(resolveChain(new Map([...RUNTIMES, tool].map((t) => [t.id, t])), tool.id), {}, ctx), deps);
const refusal = async (tool: Tool): Promise<{ code: string; message: string; details: unknown }> => {
  const error = await run(tool).then(() => undefined, (e: unknown) => e);
  if (!isKiwiError(error)) throw new Error(`expected a KiwiError, got ${String(error)}`);
  return { code: error.code, message: error.message, details: error.details };
};

install('kiwi-fake-http', '1.4.2');
install('KiwiFakeModels', '2.0.0rc1');

describe('config.requires of a Python tool', () => {
  it('runs the tool when every requirement is installed at a satisfying version (extras ignored, names as pip spells them)', async () => {
    const tool = pythonTool('satisfied', ['kiwi-fake-http>=1.2,<2', 'kiwi_fake_http[socks]~=1.4', 'kiwifakemodels>=1.0']);
    const result = await run(tool);
    expect(result).toMatchObject({ isError: false, data: { ok: {} } });
  });

  it('refuses a missing package before the script starts, saying which and how to install it', async () => {
    const tool = pythonTool('missing', ['kiwi-fake-http>=1.0', 'kiwi-surely-absent>=0.24.0']);
    const error = await refusal(tool);
    expect(error.code).toBe('REQUIREMENT_MISSING');
    expect(error.message).toBe("tool missing cannot run: kiwi-surely-absent is not installed, kiwi-surely-absent>=0.24.0 is needed (for python3); install with `python3 -m pip install 'kiwi-surely-absent>=0.24.0'` and call it again");
    expect(error.details).toEqual({ missing: [{ package: 'kiwi-surely-absent', required: 'kiwi-surely-absent>=0.24.0', found: null }] });
    expect(existsSync(path.join(dir, 'missing.ran'))).toBe(false);
  });

  it('refuses a version that is too old, or a pre-release of the one asked for, naming the version found', async () => {
    const error = await refusal(pythonTool('too_old', ['kiwi-fake-http>=2.0', 'kiwifakemodels>=2.0']));
    expect(error.message).toContain('kiwi-fake-http 1.4.2 is installed, kiwi-fake-http>=2.0 is needed; kiwifakemodels 2.0.0rc1 is installed, kiwifakemodels>=2.0 is needed');
    expect(error.message).toContain("pip install 'kiwi-fake-http>=2.0' 'kiwifakemodels>=2.0'");
    expect(existsSync(path.join(dir, 'too_old.ran'))).toBe(false);
  });

  it('remembers a pass per tool version, and checks a refusal again once the package is installed', { timeout: 60_000 }, async () => {
    install('kiwi-fake-cache', '3.1.0');
    await run(pythonTool('cached', ['kiwi-fake-cache==3.1.*']));
    uninstall('kiwi-fake-cache', '3.1.0');
    // Same tool version: the passed check stands for the life of the process.
    await expect(run(pythonTool('cached', ['kiwi-fake-cache==3.1.*']))).resolves.toMatchObject({ isError: false });
    // A new version of the tool is checked again, and refused now.
    expect((await refusal(pythonTool('cached', ['kiwi-fake-cache==3.1.*'], '1.0.1'))).message).toContain('kiwi-fake-cache is not installed');
    install('kiwi-fake-cache', '3.1.5');
    await expect(run(pythonTool('cached', ['kiwi-fake-cache==3.1.*'], '1.0.1'))).resolves.toMatchObject({ isError: false });
  });

  it('is refused on a runtime that is not python', () => {
    expect(() => planCall(resolveChain(new Map([...RUNTIMES, pythonTool('on_node', ['x>=1'], '1.0.0', 'node_runtime')].map((t) => [t.id, t])), 'on_node'), {}, ctx)).toThrow(
      /tool on_node .*: config\.requires lists Python packages, but the tool runs `node`, not python; run it on python_runtime or remove config\.requires/,
    );
  });
});
