import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import { createTempProject, FIXTURES, type TempProject } from '../helpers/temp-project.js';

// The two findings of issue 9 about the audit log, replayed through the real tool proxy.
const SECRET = 'sk-ant-api03-Kiwi9TestOnlyNotARealKey0000000000';
const ENV_FILE = `APP_NAME=kiwi\nANTHROPIC_API_KEY=${SECRET}\nDB_PASSWORD=correct-horse-battery\n`;

const TOOLS: Record<string, string> = {
  'files.yaml': `tool_id: files
tool_type: mcp_server
executor: subprocess
version: "1.0.0"
description: filesystem MCP server
config: { transport: stdio, command: node, args: ["${path.resolve('node_modules/@modelcontextprotocol/server-filesystem/dist/index.js')}", "."] }
`,
  'read_file.yaml': `tool_id: read_file
tool_type: script
executor: subprocess
version: "1.0.0"
description: read a file
config: { command: node, script: echo_args.mjs, args: ["{script}", "{path}"] }
parameters:
  - { name: path, type: string, required: true, format: path }
`,
};

const POLICY = `version: 1
tools: [read_file]
filesystem: { read: ["docs/**", ".env"], write: [], allow_secret_paths: [".env"] }
commands:
  - { executable: node }
mcp: { tools: ["files.read_text_file"] }
`;

let temp: TempProject;
let project: Project;

beforeAll(async () => {
  temp = createTempProject();
  for (const [name, text] of Object.entries(TOOLS)) temp.write(`.ai/tools/test/${name}`, text);
  temp.write('.ai/tools/test/echo_args.mjs', readFileSync(path.join(FIXTURES, 'proxy', 'echo_args.mjs'), 'utf8'));
  temp.write('.ai/config/policy.yaml', POLICY);
  temp.write('.env', ENV_FILE);
  project = await openProject({ projectDir: temp.root, env: { PATH: process.env['PATH'], HOME: process.env['HOME'] }, session: 'audit-redaction' });
});

afterAll(async () => {
  await project?.close();
  temp?.remove();
});

/** All audit bytes on disk, every file. */
function auditFiles(): { text: string; bytes: number } {
  let text = '';
  let bytes = 0;
  for (const entry of readdirSync(project.auditDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    text += readFileSync(file, 'utf8');
    bytes += statSync(file).size;
  }
  return { text, bytes };
}

describe('audit log under the issue 9 attacks', () => {
  it('keeps a .env secret that an MCP tool read (the policy grants it) out of the audit file, while the agent still gets it', async () => {
    const outcome = await project.proxy.call({ target: { tool: 'files.read_text_file', args: { path: '.env' } }, caller: { session: 'audit-redaction', client: 'audit-redaction', source: 'mcp' } });
    expect(outcome.status, JSON.stringify(outcome)).toBe('ok');
    if (outcome.status === 'ok') expect(outcome.result.text).toContain(SECRET);
    await project.audit.flush();
    const { text } = auditFiles();
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('correct-horse-battery');
    const [record] = (await readAuditTail({ dir: project.auditDir, limit: 10, session: 'audit-redaction' })).filter((r) => r.tool === 'files.read_text_file');
    expect(JSON.stringify(record?.result)).toContain('ANTHROPIC_API_KEY=[redacted:api-key]');
    expect(JSON.stringify(record?.result)).toContain('APP_NAME=kiwi');
  });

  it('keeps denied calls with a 60 KB path argument to a few KB each', async () => {
    const before = auditFiles().bytes;
    const payload = `docs/${'../'.repeat(20_000)}etc/passwd`;
    for (let i = 0; i < 50; i += 1) {
      const outcome = await project.proxy.call({ target: { tool: 'read_file', args: { path: payload } }, caller: { session: 'audit-redaction', client: 'audit-redaction', source: 'gateway' } });
      expect(outcome.status).not.toBe('ok');
    }
    await project.audit.flush();
    const grown = auditFiles().bytes - before;
    expect(grown).toBeGreaterThan(0);
    expect(grown / 50).toBeLessThan(4 * 1024);
  });
});
