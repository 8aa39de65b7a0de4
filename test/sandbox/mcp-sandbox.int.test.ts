import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { detectBwrap, UNSANDBOXED_WARNING } from '../../src/primitives/sandbox.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import type { CallOutcome } from '../../src/proxy/tool-call.js';
import { createTempProject, FIXTURES, REPO_ROOT, type TempProject } from '../helpers/temp-project.js';

const hasBwrap = await detectBwrap();
if (!hasBwrap && process.env.KIWI_REQUIRE_SANDBOX === '1') throw new Error('KIWI_REQUIRE_SANDBOX=1 but bwrap does not run here; install bubblewrap');

const PROBE_SERVER = path.join(FIXTURES, 'mcp', 'sandbox-probe-server.mjs');
const FILESYSTEM_SERVER = path.join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
/** In every probe server's argv, so its processes (and their children) can be found in /proc. */
const marker = `kiwi-mcp-sandbox-${randomUUID()}`;

const server = (id: string, args: string[]) => `tool_id: ${id}
tool_type: mcp_server
executor: subprocess
version: "1.0.0"
description: "${id} over stdio"
config: { transport: stdio, command: node, args: ${JSON.stringify(args)} }
`;

let temp: TempProject | undefined;
let project: Project | undefined;
let listener: Server;
let port: number;

beforeAll(async () => {
  listener = createServer((socket) => socket.end());
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as { port: number }).port;
});

afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())));

afterEach(async () => {
  await project?.close();
  temp?.remove();
  project = undefined;
  temp = undefined;
  vi.restoreAllMocks();
});

/** A project with two probe servers (`probe_net` keeps the network) and the filesystem server, under this policy's `sandbox:` block. */
async function open(sandboxYaml: string): Promise<Project> {
  temp = createTempProject();
  temp.write('.ai/tools/mcp/probe.yaml', server('probe', [PROBE_SERVER, marker]));
  temp.write('.ai/tools/mcp/probe_net.yaml', server('probe_net', [PROBE_SERVER, marker]));
  temp.write('.ai/tools/mcp/files.yaml', server('files', [FILESYSTEM_SERVER, '.']));
  temp.write('.env', 'TOKEN=must-not-leak\n');
  temp.write('docs/readme.txt', 'hello from docs\n');
  temp.write('out/.keep', '');
  temp.write(
    '.ai/config/policy.yaml',
    `version: 1\ntools: []\nfilesystem: { read: ["**"], write: ["out/**"] }\ncommands: [{ executable: node }]\nmcp: { tools: ["probe.*", "probe_net.*", "files.*"] }\n${sandboxYaml}`,
  );
  project = await openProject({ projectDir: temp.root, env: { PATH: process.env.PATH, HOME: process.env.HOME }, session: 'mcp-sandbox-test' });
  return project;
}

async function call(tool: string, args: Record<string, unknown> = {}): Promise<string> {
  const outcome = await callOutcome(tool, args);
  if (outcome.status !== 'ok') throw new Error(`${tool} failed: ${JSON.stringify(outcome)}`);
  return outcome.result.text;
}

function callOutcome(tool: string, args: Record<string, unknown> = {}): Promise<CallOutcome> {
  if (project === undefined) throw new Error('open a project first');
  return project.proxy.call({ target: { tool, args }, caller: { session: 'mcp-sandbox-test', client: 'test', source: 'cli' } });
}

/** Pids of running processes whose command line carries the marker (the sandbox's own bwrap included). */
function markedProcesses(): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/u.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(marker)) found.push(Number(name));
    } catch {
      // ended while we looked
    }
  }
  return found;
}

describe.runIf(hasBwrap)('stdio MCP servers in the sandbox', () => {
  it('run server-filesystem under bwrap, still listing and reading the files under its root', async () => {
    const p = await open('');
    const listing = await call('files.list_directory', { path: temp?.root });
    expect(listing).toContain('[DIR] docs');
    expect(await call('files.read_text_file', { path: path.join(temp?.root ?? '', 'docs/readme.txt') })).toBe('hello from docs\n');
    const [pid] = p.mcp.stats().pids;
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]).toMatch(/bwrap$/u);
  });

  it("hide the project's secrets, refuse writes outside the write grant and run in their own pid namespace", async () => {
    await open('');
    expect(await call('probe.read', { name: path.join(temp?.root ?? '', 'docs/readme.txt') })).toBe('content:hello from docs\n');
    expect(await call('probe.read', { name: path.join(temp?.root ?? '', '.env') })).toBe('content:');
    expect(await call('probe.write', { name: path.join(temp?.root ?? '', 'escape.txt') })).toBe('EROFS');
    expect(await call('probe.write', { name: path.join(temp?.root ?? '', 'out/granted.txt') })).toBe('ok');
    expect(existsSync(path.join(temp?.root ?? '', 'escape.txt'))).toBe(false);
    expect(readFileSync(path.join(temp?.root ?? '', 'out/granted.txt'), 'utf8')).toBe('probe');
    expect(Number(await call('probe.pid'))).toBeLessThan(10);
  });

  it('see a secret that sandbox.secrets grants to their own tool id', async () => {
    await open('sandbox: { secrets: { probe_net: [".env"] } }\n');
    const env = { name: path.join(temp?.root ?? '', '.env') };
    expect(await call('probe.read', env)).toBe('content:');
    expect(await call('probe_net.read', env)).toBe('content:TOKEN=must-not-leak\n');
  });

  it('reach 127.0.0.1 only when sandbox.network names the server', async () => {
    await open('sandbox: { network: [probe_net] }\n');
    expect(await call('probe.connect', { port })).toMatch(/^E(CONNREFUSED|NETUNREACH)$/u);
    expect(await call('probe_net.connect', { port })).toBe('connected');
  });

  it('get no CPU-time limit: a server outlives more CPU seconds than a call may use', async () => {
    const p = await open('sandbox: { limits: { cpu_seconds: 1 } }\n');
    const pid = await call('probe.pid');
    expect(await call('probe.burn', { ms: 1100 })).toBe('burnt');
    expect(await call('probe.pid')).toBe(pid);
    expect(p.mcp.stats().spawned).toBe(1);
  });

  it('leave no process behind once the pool closes them, background children included', async () => {
    const p = await open('');
    expect(Number(await call('probe.linger'))).toBeGreaterThan(0);
    expect(markedProcesses().length).toBeGreaterThanOrEqual(2);
    await p.mcp.closeServer('probe');
    expect(markedProcesses()).toEqual([]);
    expect(p.mcp.stats().pids).toEqual([]);
  });
});

describe('stdio MCP servers without a working bwrap', () => {
  it('are refused under mode require, with an error that says why', async () => {
    const p = await open('sandbox: { mode: require, bwrap: /nonexistent/bwrap }\n');
    const outcome = await callOutcome('probe.pid');
    expect(outcome.status, JSON.stringify(outcome)).toBe('error');
    if (outcome.status === 'error') {
      expect(outcome.error.code).toBe('SPAWN_FAILED');
      expect(outcome.error.message).toMatch(/MCP server "probe" was not started: sandbox: require is set but the sandbox does not run here/u);
    }
    expect(p.mcp.stats().spawned).toBe(0);
  });

  it('start unsandboxed under mode auto, after the start-up warning names them', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    await open('sandbox: { mode: auto, bwrap: /nonexistent/bwrap }\n');
    expect(warn).toHaveBeenCalledWith(expect.stringContaining(UNSANDBOXED_WARNING));
    expect(UNSANDBOXED_WARNING).toMatch(/stdio MCP servers/u);
    expect(Number(await call('probe.pid'))).toBeGreaterThan(10);
  });
});
