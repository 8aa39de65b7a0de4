import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDirective } from '../../src/registry/directive-parser.js';
import { toolsTagRefusal } from '../../src/registry/directive-tools.js';
import { loadRegistry } from '../../src/registry/load-registry.js';

const LABEL = { file: '/p/.ai/directives/demo.md', display: '.ai/directives/demo.md' };

const directive = (tools: string, name = 'demo'): string =>
  `# Demo\n\n<directive name="${name}" version="1.0.0">\n  <metadata>\n    <description>Demo directive</description>\n    ${tools}\n  </metadata>\n</directive>\n`;

function problems(tools: string): string[] {
  const result = parseDirective(directive(tools), LABEL, 'project');
  if (result.ok) throw new Error('expected the directive to be rejected');
  return result.issues.map((i) => i.message);
}

describe('a directive\'s <tools>', () => {
  it('reads both forms, with where each name is written', () => {
    const result = parseDirective(directive('<tools>\n      <tool>git_status</tool>\n      <tool id="read_file"/>\n      <tool>fs.read_text_file</tool>\n    </tools>'), LABEL, 'project');
    expect(result.ok && result.value.tools).toEqual([
      { name: 'git_status', site: '.ai/directives/demo.md:7:7', line: 7 },
      { name: 'read_file', site: '.ai/directives/demo.md:8:7', line: 8 },
      { name: 'fs.read_text_file', site: '.ai/directives/demo.md:9:7', line: 9 },
    ]);
  });

  it('is absent when not written, and an empty <tools/> names nothing', () => {
    const none = parseDirective(directive(''), LABEL, 'project');
    expect(none.ok && none.value.tools).toBeUndefined();
    const empty = parseDirective(directive('<tools/>'), LABEL, 'project');
    expect(empty.ok && empty.value.tools).toEqual([]);
  });

  it.each([
    ['<tools>git_status, read_file</tools>', /6:5: metadata\.tools: <tools> holds text "git_status, read_file"; write each tool as <tool>tool_id<\/tool>/],
    ['<tools mode="only"><tool>a</tool></tools>', /<tools> takes no attributes/],
    ['<tools><command>git</command></tools>', /<tools> holds <command>; write each tool as/],
    ['<tools><tool/></tools>', /a <tool> names no tool/],
    ['<tools><tool id="a">b</tool></tools>', /<tool id="a"> holds the different name "b"; give the name once/],
    ['<tools><tool name="a"/></tools>', /<tool> has no attribute "name"/],
    ['<tools><tool>rm -rf</tool></tools>', /<tool>rm -rf<\/tool>: /],
    ['<tools><tool>a</tool><tool id="a"/></tools>', /the tool "a" is named twice; keep one/],
  ])('refuses %s with a message saying what to write', (tools, message) => {
    expect(problems(tools).join('\n')).toMatch(message);
  });

  it('must sit inside <metadata>', () => {
    const text = `<directive name="demo" version="1.0.0"><metadata><description>d</description></metadata><tools><tool>a</tool></tools></directive>`;
    const result = parseDirective(text, LABEL, 'project');
    expect(!result.ok && result.issues.map((i) => i.message).join('\n')).toMatch(/tools: <tools> belongs inside <metadata>; move it there/);
  });
});

describe('a call against <tools>', () => {
  const scope = { name: 'review', tools: ['read_file', 'github'] };

  it('allows a named tool, a tool of a named MCP server, and any call of a directive without <tools>', () => {
    expect(toolsTagRefusal(scope, 'read_file')).toBeUndefined();
    expect(toolsTagRefusal(scope, 'github.create_issue', 'github')).toBeUndefined();
    expect(toolsTagRefusal({ name: 'open' }, 'anything')).toBeUndefined();
    expect(toolsTagRefusal(undefined, 'anything')).toBeUndefined();
  });

  it('refuses any other, naming the tag and what it names', () => {
    expect(toolsTagRefusal(scope, 'word_count')).toBe("denied by directive review's <tools>: `word_count` is not named there (it names `read_file`, `github`); add <tool>word_count</tool> to its <tools> to let its thread call it");
    // A dotted registry id is not a server's tool: naming its prefix does not allow it.
    expect(toolsTagRefusal(scope, 'github.local')).toMatch(/`github\.local` is not named there/);
    expect(toolsTagRefusal({ name: 'none', tools: [] }, 'read_file')).toMatch(/it names none/);
  });
});

describe('loading <tools> against the registry', () => {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-directive-tools-')));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (relative: string, text: string): void => {
    mkdirSync(path.dirname(path.join(root, relative)), { recursive: true });
    writeFileSync(path.join(root, relative), text);
  };
  write('.ai/tools/read_file.yaml', 'tool_id: read_file\ntool_type: script\nexecutor: subprocess\nconfig: { command: cat }\n');
  write('.ai/tools/subprocess.yaml', 'tool_id: subprocess\ntool_type: primitive\n');
  write('.ai/tools/fs.yaml', 'tool_id: fs\ntool_type: mcp_server\nexecutor: subprocess\nconfig: { transport: stdio, command: node, args: [server.js] }\n');
  write('.ai/directives/good.md', directive('<tools><tool>read_file</tool><tool>fs</tool><tool>fs.read_text_file</tool></tools>', 'good'));
  write('.ai/directives/typo.md', directive('<tools><tool>read_fil</tool></tools>', 'typo'));
  write('.ai/directives/runtime.md', directive('<tools>\n<tool>subprocess</tool></tools>', 'runtime'));
  write('.ai/directives/stray.md', directive('<tools><tool>nowhere.tool</tool></tools>', 'stray'));

  it('loads names of tools, MCP servers and their tools; a name it lacks keeps the directive out, naming file and line', async () => {
    const registry = await loadRegistry({ projectDir: root, userDir: path.join(root, 'no-home') });
    expect(registry.errors.filter((e) => e.kind === 'tool')).toEqual([]);
    expect([...registry.directives.keys()]).toEqual(['good']);
    expect(registry.directives.get('good')?.tools?.map((t) => t.name)).toEqual(['read_file', 'fs', 'fs.read_text_file']);
    expect(registry.errors.map((e) => e.message).sort()).toEqual([
      '.ai/directives/runtime.md:7:1: metadata.tools: "subprocess" is a primitive, which runs other tools and cannot be called; name the tools that run on it (directive runtime is not loaded until then)',
      '.ai/directives/stray.md:6:12: metadata.tools: no tool "nowhere.tool" in the registry; name a tool id of .ai/tools/, an MCP server\'s id, or "server.tool" (run `kiwi tools list`) (directive stray is not loaded until then)',
      '.ai/directives/typo.md:6:12: metadata.tools: no tool "read_fil" in the registry (did you mean "read_file"?); name a tool id of .ai/tools/, an MCP server\'s id, or "server.tool" (run `kiwi tools list`) (directive typo is not loaded until then)',
    ]);
    expect(registry.errors.find((e) => e.message.startsWith('.ai/directives/typo.md'))).toMatchObject({ file: path.join(root, '.ai/directives/typo.md'), field: 'metadata.tools', line: 6 });
  });
});
