import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDirective } from '../../src/registry/directive-parser.js';
import { signText } from '../../src/registry/signature.js';
import type { Directive, RegistryIssue } from '../../src/registry/types.js';

const LABEL = { file: '/p/.ai/directives/demo.md', display: '.ai/directives/demo.md' };
const VECTOR = readFileSync(path.resolve(import.meta.dirname, '../fixtures/registry/agent-directive.signed.md'), 'utf8');

function parse(text: string): Directive {
  const result = parseDirective(text, LABEL, 'project');
  if (!result.ok) throw new Error(`expected a valid directive, got:\n${result.issues.map((i) => i.message).join('\n')}`);
  return result.value;
}

function issues(text: string): RegistryIssue[] {
  const result = parseDirective(text, LABEL, 'project');
  if (result.ok) throw new Error('expected the directive to be rejected');
  for (const issue of result.issues) {
    expect(issue.kind).toBe('directive');
    expect(issue.message.startsWith('.ai/directives/demo.md')).toBe(true);
  }
  return result.issues;
}

function only(text: string): RegistryIssue {
  const found = issues(text);
  expect(found.map((i) => i.message)).toHaveLength(1);
  return found[0] as RegistryIssue;
}

function wrap(metadata: string, rest = ''): string {
  return `# Demo\n\n<directive name="demo" version="1.0.0">\n  <metadata>\n    <description>Demo directive</description>\n${metadata}\n  </metadata>\n${rest}</directive>\n`;
}

describe('the Kiwi MCP test vector', () => {
  it('parses, with its permissions, model tier and inputs', () => {
    const directive = parse(VECTOR);
    expect(directive).toMatchObject({
      name: 'agent',
      version: '1.1.0',
      category: 'core',
      modelTier: 'orchestrator',
      limits: {},
      signature: { timestamp: '2026-01-24T05:44:46Z', hash: '96440106d21b93926bd00feca333b138871a2ec959f2fe5a444d86bf0e5c58e0' },
    });
    expect(directive.description).toMatch(/^Directive-first agent/);
    expect(directive.permissions).toEqual([
      { kind: 'read', resource: 'filesystem', path: '**/*' },
      { kind: 'write', resource: 'filesystem', path: '**/*' },
      { kind: 'execute', resource: 'kiwi-mcp', action: 'search' },
      { kind: 'execute', resource: 'kiwi-mcp', action: 'load' },
      { kind: 'execute', resource: 'kiwi-mcp', action: 'execute' },
      { kind: 'execute', resource: 'kiwi-mcp', action: 'help' },
      { kind: 'execute', resource: 'shell', action: '*' },
    ]);
    expect(directive.inputs).toEqual([
      { name: 'task', type: 'string', required: true, description: 'The task or goal the user wants to accomplish' },
      { name: 'context', type: 'object', required: false, description: 'Additional context about the project, constraints, or preferences' },
    ]);
    expect(directive.xml.startsWith('<directive name="agent" version="1.1.0">')).toBe(true);
    expect(directive.xml.endsWith('</directive>')).toBe(true);
  });

  it('is rejected after a one-byte change inside the block, with the re-sign hint', () => {
    const issue = only(VECTOR.replace('<category>core</category>', '<category>corE</category>'));
    expect(issue.message).toBe(
      '.ai/directives/demo.md:1:1: signature does not match the content; run `kiwi sign <file>` after reviewing the change',
    );
  });
});

describe('valid directives', () => {
  it('reads every permission tag form', () => {
    const directive = parse(
      wrap(`    <permissions>
      <read resource="filesystem" path="src/**"/>
      <write resource="filesystem" path="dist/**"/>
      <execute resource="tool" id="bash"/>
      <execute resource="shell" action="git"/>
      <execute resource="kiwi-mcp" action="search"/>
      <execute resource="spawn" action="thread"/>
    </permissions>`),
    );
    expect(directive.permissions).toEqual([
      { kind: 'read', resource: 'filesystem', path: 'src/**' },
      { kind: 'write', resource: 'filesystem', path: 'dist/**' },
      { kind: 'execute', resource: 'tool', id: 'bash' },
      { kind: 'execute', resource: 'shell', action: 'git' },
      { kind: 'execute', resource: 'kiwi-mcp', action: 'search' },
      { kind: 'execute', resource: 'spawn', action: 'thread' },
    ]);
    expect(directive.signature).toBeNull();
  });

  it('reads limits, with durations in seconds and spend in dollars', () => {
    const directive = parse(wrap('    <limits turns="10" tokens="20000" spawns="2" duration="5m" spend="$2.50"/>'));
    expect(directive.limits).toEqual({ turns: 10, tokens: 20000, spawns: 2, duration: 300, spend: 2.5 });
    expect(parse(wrap('    <limits duration="90"/>')).limits).toEqual({ duration: 90 });
  });

  it('accepts <model_class tier> as well as <model tier>', () => {
    expect(parse(wrap('    <model_class tier="reasoning" fallback="fast">Why</model_class>')).modelTier).toBe('reasoning');
    expect(parse(wrap('    <model tier="fast"/>')).modelTier).toBe('fast');
  });

  it('ignores XML-looking Markdown outside the block, code fences included', () => {
    const text = `# Notes\n\nUse <br> freely & mention <b>tags</b>.\n\n\`\`\`html\n<div><p>unclosed\n\`\`\`\n\n${wrap('')}\nAfter: <unclosed & stray\n`;
    expect(parse(text).name).toBe('demo');
  });

  it('decodes entities and keeps no permissions when none are declared', () => {
    const directive = parse(wrap('').replace('Demo directive', 'Fish &amp; chips'));
    expect(directive.description).toBe('Fish & chips');
    expect(directive.permissions).toEqual([]);
  });

  it('verifies a signature it made itself', () => {
    expect(parse(signText('directive', wrap(''), new Date('2026-01-01T00:00:00Z'))).signature?.timestamp).toBe('2026-01-01T00:00:00Z');
  });
});

describe('invalid directives', () => {
  it('reports malformed XML with the file line and column', () => {
    const text = wrap('    <category>core</categry>');
    const issue = only(text);
    expect(issue.line).toBe(6);
    expect(issue.message).toMatch(/^\.ai\/directives\/demo\.md:6:\d+: the <directive> block is not well-formed XML: .*categry/);
  });

  it('explains a bare & inside the block', () => {
    expect(only(wrap('').replace('Demo directive', 'Fish & chips')).message).toContain('Write & as &amp; inside the block.');
  });

  it('counts lines from the top of the file when a signature line is present', () => {
    const signed = signText('directive', wrap(''), new Date('2026-01-01T00:00:00Z'));
    const broken = signed.replace('</metadata>', '</metadatx>');
    const found = issues(broken);
    expect(found[0]?.line).toBe(8);
  });

  it('rejects a file without a directive block', () => {
    expect(only('# Just notes\n').message).toContain('no directive block found; add <directive name="my_directive" version="1.0.0">');
  });

  it('rejects a missing name, version, metadata or description', () => {
    expect(only('<directive version="1.0.0"><metadata><description>d</description></metadata></directive>').message).toContain(
      'name: the <directive> tag has no name',
    );
    expect(only('<directive name="a"><metadata><description>d</description></metadata></directive>').message).toContain(
      'version: the <directive> tag has no version',
    );
    expect(only('<directive name="a" version="1"></directive>').message).toContain('metadata: missing; add <metadata>');
    expect(only('<directive name="a" version="1"><metadata/></directive>').message).toContain('metadata.description: missing or empty');
  });

  it('rejects a directive name with look-alike characters', () => {
    const issue = only(wrap('').replace('name="demo"', 'name="d\u0435mo"'));
    expect(issue.message).toContain('U+0435 CYRILLIC SMALL LETTER IE');
    expect(issue.message).toContain('write "demo"');
  });

  it('rejects unknown permission tags, resources and attributes, and missing targets', () => {
    expect(only(wrap('<permissions><exec resource="tool" id="x"/></permissions>')).message).toContain(
      'metadata.permissions[0]: <exec> is not a permission; write <read .../>, <write .../> or <execute .../> (did you mean "execute"?)',
    );
    expect(only(wrap('<permissions><read resource="filesytem" path="x"/></permissions>')).message).toContain(
      'resource "filesytem" is not known for <read>; write <read resource="filesystem" path="src/**"/> (did you mean "filesystem"?)',
    );
    expect(only(wrap('<permissions><read resource="filesystem"/></permissions>')).message).toContain(
      'metadata.permissions[0].path: needs path="..."; write <read resource="filesystem" path="src/**"/>',
    );
    expect(only(wrap('<permissions><execute resource="tool" tool="x" id="y"/></permissions>')).message).toContain(
      'metadata.permissions[0].tool: <execute resource="tool"> has no attribute "tool"; it takes resource and id or action: write <execute resource="tool" id="bash"/>',
    );
    expect(only(wrap('<permissions><execute resource="tool"/></permissions>')).message).toContain('needs id="..."');
  });

  it('points at the line of the offending permission tag', () => {
    const text = wrap('    <permissions>\n      <read resource="filesystem" path="a"/>\n      <write resource="disk" path="b"/>\n    </permissions>');
    expect(only(text).line).toBe(8);
  });

  it('rejects permissions and limits outside <metadata>', () => {
    expect(only(wrap('', '<permissions><read resource="filesystem" path="x"/></permissions>\n')).message).toContain(
      'permissions: <permissions> belongs inside <metadata>; move it there',
    );
  });

  it("reads Kiwi's child-element limits (deploy_staging.md's block), the same as attributes", () => {
    const block = '<limits>\n<turns>20</turns>\n<tokens>50000</tokens>\n<spawns>3</spawns>\n<duration>600</duration>\n<spend currency="USD">5.00</spend>\n</limits>';
    expect(parse(wrap(block)).limits).toEqual({ turns: 20, tokens: 50000, spawns: 3, duration: 600, spend: 5 });
    expect(parse(wrap('<limits turns="4"><duration>2m</duration></limits>')).limits).toEqual({ turns: 4, duration: 120 });
  });

  it('rejects bad child-element limits, saying which form to write', () => {
    const found = issues(wrap('<limits turns="3"><turns>4</turns><spend currency="EUR">5</spend><tokens>many</tokens><budget>1</budget></limits>')).map((i) => i.message);
    expect(found).toHaveLength(4);
    expect(found.join('\n')).toContain('metadata.limits.turns: turns is given twice; keep one');
    expect(found.join('\n')).toContain('spend is counted in US dollars; write currency="USD" (or leave it out), not "EUR"');
    expect(found.join('\n')).toContain('metadata.limits.tokens: "many" is not a whole number; write e.g. <tokens>10</tokens>');
    expect(found.join('\n')).toContain('<limits> has no element <budget>');
  });

  it("reads <hooks>: each condition checked (CEL or Kiwi's and/or/not), one action, inputs kept as templates", () => {
    const hooks = [
      '<hooks>',
      '<hook><when>event.code == "permission_denied"</when><directive>request_elevated_permissions</directive>',
      '<inputs><missing_cap>${event.detail.missing}</missing_cap></inputs></hook>',
      '<hook><when>event.name == "error" and not (event.code == "timeout")</when><deny>errors stop the deploy</deny></hook>',
      '<hook><when>tool.id == "bash"</when><require_approval/></hook>',
      '<hook><when>cost.turns > limits.turns * 0.9</when><annotate>near the turn limit</annotate></hook>',
      '</hooks>',
    ].join('\n');
    expect(parse(wrap(hooks)).hooks).toEqual([
      { when: 'event.code == "permission_denied"', line: 7, action: { kind: 'directive', name: 'request_elevated_permissions', inputs: { missing_cap: '${event.detail.missing}' } } },
      { when: 'event.name == "error" and not (event.code == "timeout")', line: 9, action: { kind: 'deny', reason: 'errors stop the deploy' } },
      { when: 'tool.id == "bash"', line: 10, action: { kind: 'require_approval' } },
      { when: 'cost.turns > limits.turns * 0.9', line: 11, action: { kind: 'annotate', text: 'near the turn limit' } },
    ]);
    expect(parse(wrap('<limits turns="3"/>')).hooks).toBeUndefined();
  });

  it('rejects bad hooks at load, naming the line and what to fix', () => {
    const found = issues(
      wrap(
        [
          '<hooks>',
          '<hook><when>evnt.code == "x"</when><deny/></hook>',
          '<hook><deny/></hook>',
          '<hook><when>event.code == "x"</when><deny/><annotate>a</annotate></hook>',
          '<hook><when>event.code == "x"</when><annotate>a</annotate><inputs><a>1</a></inputs></hook>',
          '<hook><when>event.code == "x"</when><webhook/></hook>',
          '<rule/>',
          '</hooks>',
        ].join('\n'),
      ),
    ).map((i) => i.message);
    const text = found.join('\n');
    expect(text).toContain('.ai/directives/demo.md:7:7: metadata.hooks[0].when: column 13: hook condition "evnt.code == \\"x\\"": Unknown variable: evnt (did you mean "event"?)');
    expect(text).toContain('metadata.hooks[1].when: the hook has no condition; add <when>event.name == "error"</when>');
    expect(text).toContain('metadata.hooks[2]: a hook has exactly one action (<directive>, <deny>, <require_approval>, <annotate>, <retry>, <skip>, <fail>, <abort>, <continue>); this one has 2');
    expect(text).toContain('metadata.hooks[3].inputs: <inputs> go with a <directive> action only');
    expect(text).toContain('metadata.hooks[4].webhook: a hook has no <webhook>');
    expect(text).toContain('metadata.hooks[5]: <hooks> holds <hook> elements, not <rule>');
  });

  it('reads steering hooks: a decision of their own, a steering directive with its bounds, fallthrough', () => {
    const hooks = [
      '<hooks>',
      '<hook fallthrough="true"><when>event.name == "error"</when><annotate>failed</annotate></hook>',
      '<hook><when>event.name == "error" and event.code == "timeout"</when><retry max="2"/></hook>',
      '<hook><when>tool.id == "a"</when><skip>not now</skip></hook>',
      '<hook><when>tool.id == "b"</when><fail/></hook>',
      '<hook><when>tool.id == "c"</when><abort>stop</abort></hook>',
      '<hook><when>tool.id == "d"</when><continue/></hook>',
      '<hook><when>event.name == "error"</when><directive steer="true" timeout_s="30" retries="3">retry_on_timeout</directive></hook>',
      '<hook><when>event.name == "error"</when><directive steer="true">retry_on_timeout</directive></hook>',
      '</hooks>',
    ].join('\n');
    expect(parse(wrap(hooks)).hooks?.map((h) => [h.action, h.fallthrough])).toEqual([
      [{ kind: 'annotate', text: 'failed' }, true],
      [{ kind: 'steer', decision: 'retry', max: 2 }, undefined],
      [{ kind: 'steer', decision: 'skip', reason: 'not now' }, undefined],
      [{ kind: 'steer', decision: 'fail', reason: 'fail by a hook' }, undefined],
      [{ kind: 'steer', decision: 'abort', reason: 'stop' }, undefined],
      [{ kind: 'steer', decision: 'continue' }, undefined],
      [{ kind: 'directive', name: 'retry_on_timeout', inputs: {}, steer: { timeoutMs: 30_000, retries: 3 } }, undefined],
      [{ kind: 'directive', name: 'retry_on_timeout', inputs: {}, steer: { timeoutMs: 60_000, retries: 1 } }, undefined],
    ]);
  });

  it('rejects bad steering hooks, saying what to write', () => {
    const found = issues(
      wrap(
        [
          '<hooks>',
          '<hook><when>true</when><retry max="0"/></hook>',
          '<hook><when>true</when><retry max="lots"/></hook>',
          '<hook fallthrough="yes"><when>true</when><continue/></hook>',
          '<hook><when>true</when><directive timeout_s="5">x</directive></hook>',
          '<hook><when>true</when><directive steer="maybe">x</directive></hook>',
          '<hook><when>true</when><directive steer="true" timeout_s="0" retries="11">x</directive></hook>',
          '</hooks>',
        ].join('\n'),
      ),
    ).map((i) => i.message);
    const text = found.join('\n');
    expect(text).toContain('metadata.hooks[0].retry: max is a whole number from 1 to 10: <retry max="2"/>');
    expect(text).toContain('metadata.hooks[1].retry: max is a whole number from 1 to 10');
    expect(text).toContain('metadata.hooks[2].fallthrough: fallthrough is "true" or "false", not "yes"');
    expect(text).toContain('metadata.hooks[3].directive: timeout_s and retries go with steer="true" only');
    expect(text).toContain('metadata.hooks[4].directive: steer is "true" or "false", not "maybe"');
    expect(text).toContain('metadata.hooks[5].directive: timeout_s is a whole number of seconds from 1 to 600');
    expect(text).toContain('metadata.hooks[5].directive: retries is a whole number from 1 to 10');
  });

  it('rejects bad limits', () => {
    const found = issues(wrap('<limits turns="ten" duration="soon" spend="lots" budget="1"/>')).map((i) => i.message);
    expect(found).toHaveLength(4);
    expect(found.join('\n')).toContain('metadata.limits.turns: "ten" is not a whole number; write e.g. turns="10"');
    expect(found.join('\n')).toContain('metadata.limits.duration: "soon" is not a duration');
    expect(found.join('\n')).toContain('metadata.limits.spend: "lots" is not an amount');
    expect(found.join('\n')).toContain('<limits> has no attribute "budget"');
  });

  it('rejects a model tag without a tier and bad inputs', () => {
    expect(only(wrap('<model fallback="fast"/>')).message).toContain('<model> needs a tier');
    expect(only(wrap('', '<inputs><input type="string"/></inputs>')).message).toContain('inputs[0].name: the input has no name');
    expect(only(wrap('', '<inputs><input name="a" required="yes"/></inputs>')).message).toContain('write required="true" or required="false"');
  });
});
