import { describe, expect, it } from 'vitest';
import { parseDirective } from '../../src/registry/directive-parser.js';
import type { Directive } from '../../src/registry/types.js';

const LABEL = { file: '/p/.ai/directives/demo.md', display: '.ai/directives/demo.md' };

function directive(permissions: string): ReturnType<typeof parseDirective> {
  const text = `<directive name="demo" version="1.0.0">\n<metadata>\n<description>Demo</description>\n<permissions>\n${permissions}\n</permissions>\n</metadata>\n</directive>\n`;
  return parseDirective(text, LABEL, 'project');
}

function loaded(permissions: string): Directive {
  const result = directive(permissions);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.value;
}

function refused(permissions: string): string[] {
  const result = directive(permissions);
  if (result.ok) throw new Error('expected the directive to be refused');
  return result.issues.map((i) => i.message);
}

describe('permission tags at load (one table with the policy side)', () => {
  it('loads <execute resource="mcp"> with id or action, keeping only the target written', () => {
    expect(loaded('<execute resource="mcp" id="files.read_file"/>\n<execute resource="mcp" action="web"/>').permissions).toEqual([
      { kind: 'execute', resource: 'mcp', id: 'files.read_file' },
      { kind: 'execute', resource: 'mcp', action: 'web' },
    ]);
  });

  it('refuses each bad form at its line, naming the forms to write', () => {
    const at = '.ai/directives/demo.md:5:1: metadata.permissions[0]';
    expect(refused('<execute resource="mcp" server="files" tool="read_file"/>')).toEqual([
      `${at}.server: <execute resource="mcp"> has no attribute "server"; it takes resource and id or action: write <execute resource="mcp" id="files.read_file"/> (one tool) or <execute resource="mcp" id="files"/> (every tool of server files)`,
      `${at}.tool: <execute resource="mcp"> has no attribute "tool"; it takes resource and id or action: write <execute resource="mcp" id="files.read_file"/> (one tool) or <execute resource="mcp" id="files"/> (every tool of server files)`,
      `${at}.id: needs id="..."; write <execute resource="mcp" id="files.read_file"/> (one tool) or <execute resource="mcp" id="files"/> (every tool of server files)`,
    ]);
    expect(refused('<execute resource="mcp" id="files" action="read_file"/>')).toEqual([
      `${at}.action: give id or action, not both; write <execute resource="mcp" id="files.read_file"/> (one tool) or <execute resource="mcp" id="files"/> (every tool of server files)`,
    ]);
    expect(refused('<execute resource="mcp" id="files.{read,write}_file"/>')).toEqual([
      `${at}.id: "files.{read,write}_file" is not an MCP server or server.tool; use letters, digits, _ . - and * for "any"; write <execute resource="mcp" id="files.read_file"/> (one tool) or <execute resource="mcp" id="files"/> (every tool of server files)`,
    ]);
    expect(refused('<execute resource="mcp" id="  "/>')).toEqual([`${at}.id: needs id="..."; write <execute resource="mcp" id="files.read_file"/> (one tool) or <execute resource="mcp" id="files"/> (every tool of server files)`]);
    expect(refused('<execute resource="MCP" id="files"/>')[0]).toContain(`${at}.resource: resource "MCP" is not known for <execute>; write <execute resource="tool" id="bash"/> or `);
    expect(refused('<execute id="files"/>')[0]).toContain(`${at}.resource: has no resource; write <execute resource="tool" id="bash"/>`);
    expect(refused('<grant resource="mcp" id="files"/>')).toEqual([`${at}: <grant> is not a permission; write <read .../>, <write .../> or <execute .../>`]);
    expect(refused('<execute resource="shell" id="git"/>')).toEqual([
      `${at}.id: <execute resource="shell"> has no attribute "id"; it takes resource and action: write <execute resource="shell" action="git"/>`,
      `${at}.action: needs action="..."; write <execute resource="shell" action="git"/>`,
    ]);
    expect(refused('<execute resource="shell" action="git push"/>')).toEqual([
      `${at}.action: "git push" is not one executable; name it alone, e.g. action="git"; write <execute resource="shell" action="git"/>`,
    ]);
    expect(refused('<read resource="filesystem" path="/etc/**"/>')).toEqual([
      `${at}.path: path "/etc/**" must be a glob relative to the project root, without \`..\`, e.g. "src/**"; write <read resource="filesystem" path="src/**"/>`,
    ]);
    expect(refused('<write resource="filesystem" path="src/../../x"/>')[0]).toContain(`${at}.path: path "src/../../x" must be a glob relative to the project root`);
    expect(refused('<read resource="filesystem" path="src/**" id="x"/>')).toEqual([
      `${at}.id: <read resource="filesystem"> has no attribute "id"; it takes resource and path: write <read resource="filesystem" path="src/**"/>`,
    ]);
  });
});
