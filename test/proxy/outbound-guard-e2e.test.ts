import { afterEach, describe, expect, it } from 'vitest';
import { openProject, type Project } from '../../src/project/open-project.js';
import { createLocalServers } from '../fixtures/http/local-servers.js';
import { createTempProject, type TempProject } from '../helpers/temp-project.js';

/** The address guard as a project wires it: from the policy's network.allow_private, through the tool proxy, into the audit. */
const servers = createLocalServers();
let temp: TempProject | undefined;
let project: Project | undefined;
afterEach(async () => {
  await project?.close();
  await servers.closeAll();
  temp?.remove();
  project = temp = undefined;
});

const TOOL = (port: number) => `tool_id: fetch_status
tool_type: api
executor: http_client
config:
  method: GET
  url: "http://{host}:${port}/status"
parameters:
  - { name: host, type: string, required: true }
`;

async function open(network: string) {
  const { port } = await servers.serve((_req, res) => res.end('{"up":true}'));
  temp = createTempProject();
  temp.write('.ai/tools/test/fetch_status.yaml', TOOL(port));
  temp.write('.ai/config/policy.yaml', `version: 1\ntools: ["*"]\n${network}`);
  project = await openProject({ projectDir: temp.root, env: { PATH: process.env['PATH'] }, session: 'guard-e2e' });
  return (host: string) => (project as Project).proxy.call({ target: { tool: 'fetch_status', args: { host } }, caller: { session: 'guard-e2e', client: 'guard-e2e', source: 'cli' } });
}

describe('outbound requests an agent steers, in a project', () => {
  it('denies an argument-filled loopback host, saying how to allow it', async () => {
    const call = await open('');
    const outcome = await call('localhost');
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/localhost resolves to .*, a loopback address .* add "localhost" \(or the range ".*"\) to network\.allow_private in \.ai\/config\/policy\.yaml/);
  });

  it('lets it through once the policy allows it', async () => {
    const call = await open('network:\n  allow_private: ["127.0.0.0/8", "::1", "localhost"]\n');
    const outcome = await call('127.0.0.1');
    expect(outcome.status).toBe('ok');
    if (outcome.status === 'ok') expect(outcome.result.data).toEqual({ up: true });
    expect((await call('localhost')).status).toBe('ok');
  });
});
