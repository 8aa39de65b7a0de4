import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { allowTools } from '../helpers/demo-project.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

/**
 * `kiwi tools import openapi` on the Swagger Petstore document that `@readme/oas-examples` ships,
 * and `kiwi tools import mcp` on the demo's filesystem MCP server (from npm); then imported tools
 * run through the gateway (over /mcp, by name): Petstore's against a local server that stands in
 * for the Petstore API and tells what it was sent, the filesystem's on the real server.
 */

const PETSTORE = path.join(REPO_ROOT, 'node_modules', '@readme', 'oas-examples', '3.0', 'json', 'petstore.json');

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let api: http.Server;
const received: Received[] = [];
let served: DemoGateway | undefined;
const importOutput: string[] = [];
const mcpOutput: string[] = [];

async function kiwi(root: string, args: string[]): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runCli([...args, '--project', root], { env: { PATH: process.env['PATH'], HOME: root }, cwd: root, io: { out: (l) => out.push(l), err: (l) => out.push(l) } });
  return { code, out };
}
const kiwiImport = (root: string) => kiwi(root, ['tools', 'import', 'openapi', PETSTORE, '--name', 'petstore']);

beforeAll(async () => {
  api = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.method === 'GET' ? JSON.stringify({ id: 7, name: 'Rex', status: 'available' }) : body);
    });
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}/v2`;
  served = await serveDemoGateway({
    prefix: 'kiwi-openapi-',
    prepare: async (root) => {
      const first = await kiwiImport(root);
      expect(first.code, first.out.join('\n')).toBe(0);
      importOutput.push(...first.out);
      const mcp = await kiwi(root, ['tools', 'import', 'mcp', 'files']);
      expect(mcp.code, mcp.out.join('\n')).toBe(0);
      mcpOutput.push(...mcp.out);
      allowTools(root, ['petstore_get_pet_by_id', 'petstore_add_pet', 'files_read_text_file']);
    },
    extraEnv: { PETSTORE_URL: url, PETSTORE_API_KEY: 'key-from-the-environment', PETSTORE_TOKEN: 'token-from-the-environment' },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
  await new Promise((resolve) => api?.close(resolve));
});

describe('kiwi tools import openapi', () => {
  it('writes a tool per operation, says what it left out, and a second import changes nothing', async () => {
    const root = served?.root as string;
    expect(importOutput[0]).toBe('Swagger Petstore: 18 tools in .ai/tools/petstore (18 new, 0 changed, 0 unchanged)');
    expect(importOutput).toContain('  not imported: POST /pet/{petId}/uploadImage: its request body is multipart/form-data, not JSON');
    const dir = path.join(root, '.ai', 'tools', 'petstore');
    const before = Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]));
    const again = await kiwiImport(root);
    expect(again.code).toBe(0);
    expect(again.out[0]).toBe('Swagger Petstore: 18 tools in .ai/tools/petstore (0 new, 0 changed, 18 unchanged)');
    expect(Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]))).toEqual(before);
    // No credential is written into a file: the environment gives them when a tool runs.
    expect(Object.values(before).join('\n')).not.toMatch(/key-from-the-environment|token-from-the-environment/);
  });

  it('runs the imported tools through the gateway by name: path parameters, the API key header, a JSON body that keeps its types', async () => {
    const gateway = served as DemoGateway;
    const client = new Client({ name: 'openapi-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.server.url}/mcp`)));
    try {
      const got = (await client.callTool({ name: 'petstore_get_pet_by_id', arguments: { petId: 7 } })) as CallToolResult;
      expect(got.isError, JSON.stringify(got)).toBeFalsy();
      expect(got.structuredContent).toMatchObject({ status: 'ok', data: { id: 7, name: 'Rex' } });
      expect(received.at(-1)).toMatchObject({ method: 'GET', url: '/v2/pet/7', headers: { api_key: 'key-from-the-environment' } });
      const added = (await client.callTool({ name: 'petstore_add_pet', arguments: { name: 'Rex', photoUrls: ['https://example.com/rex.png'], status: 'available' } })) as CallToolResult;
      expect(added.isError, JSON.stringify(added)).toBeFalsy();
      const sent = received.at(-1) as Received;
      expect(sent).toMatchObject({ method: 'POST', url: '/v2/pet', headers: { authorization: 'Bearer token-from-the-environment', 'content-type': 'application/json' } });
      // Arguments the call did not give are left out of the body.
      expect(JSON.parse(sent.body)).toEqual({ name: 'Rex', photoUrls: ['https://example.com/rex.png'], status: 'available' });
    } finally {
      await client.close();
    }
  });
});

describe('kiwi tools import mcp', () => {
  it("writes a tool per tool the server lists that the policy lets it see, and a second import changes nothing", async () => {
    const root = served?.root as string;
    // The demo policy's mcp.tools names six of the filesystem server's tools.
    expect(mcpOutput[0]).toBe('MCP server files: 6 tools in .ai/tools/files (6 new, 0 changed, 0 unchanged)');
    expect(readdirSync(path.join(root, '.ai', 'tools', 'files')).sort()).toEqual(['files_directory_tree.yaml', 'files_get_file_info.yaml', 'files_list_allowed_directories.yaml', 'files_list_directory.yaml', 'files_read_text_file.yaml', 'files_search_files.yaml']);
    const again = await kiwi(root, ['tools', 'import', 'mcp', 'files']);
    expect(again.out[0]).toBe('MCP server files: 6 tools in .ai/tools/files (0 new, 0 changed, 6 unchanged)');
    const wrong = await kiwi(root, ['tools', 'import', 'mcp', 'read_file']);
    expect(wrong).toEqual({ code: 2, out: ['kiwi tools: no MCP server `read_file` in the registry; give the tool_id of an mcp_server manifest (`kiwi tools list` shows them)'] });
  });

  it('runs an imported MCP tool through the gateway by its new name', async () => {
    const client = new Client({ name: 'mcp-import-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${(served as DemoGateway).server.url}/mcp`)));
    try {
      const listed = (await client.listTools()).tools.find((t) => t.name === 'files_read_text_file');
      expect(listed?.inputSchema).toMatchObject({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] });
      const read = (await client.callTool({ name: 'files_read_text_file', arguments: { path: 'README.md' } })) as CallToolResult;
      expect(read.isError, JSON.stringify(read)).toBeFalsy();
      expect(read.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n')).toContain('one two three');
    } finally {
      await client.close();
    }
  });
});
