import { describe, expect, it } from 'vitest';
import { signText } from '../../src/registry/signature.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import type { RegistryIssue, Tool } from '../../src/registry/types.js';

const LABEL = { file: '/p/.ai/tools/x.yaml', display: '.ai/tools/x.yaml' };

function parse(text: string): Tool {
  const result = parseToolManifest(text, LABEL, 'project');
  if (!result.ok) throw new Error(`expected a valid manifest, got:\n${result.issues.map((i) => i.message).join('\n')}`);
  return result.value;
}

function issues(text: string): RegistryIssue[] {
  const result = parseToolManifest(text, LABEL, 'project');
  if (result.ok) throw new Error('expected the manifest to be rejected');
  for (const issue of result.issues) {
    expect(issue.kind).toBe('tool');
    expect(issue.file).toBe(LABEL.file);
    expect(issue.message.startsWith('.ai/tools/x.yaml')).toBe(true);
  }
  return result.issues;
}

function only(text: string): RegistryIssue {
  const found = issues(text);
  expect(found.map((i) => i.message)).toHaveLength(1);
  return found[0] as RegistryIssue;
}

describe('valid manifests', () => {
  it('reads the api example from the design doc', () => {
    const tool = parse(`tool_id: weather_forecast
tool_type: api
executor: http_client
version: "1.0.0"
description: "Get the weather forecast for coordinates"
mutates_state: false
config:
  method: GET
  url_template: "https://api.example.com/v1/forecast?lat={lat}&lon={lon}"
  headers: { X-API-Key: "\${WEATHER_API_KEY}" }
parameters:
  - { name: lat, type: number, required: true }
  - { name: lon, type: number, required: true }
tags: [weather]
examples: ["weather in Paris"]
`);
    expect(tool).toEqual({
      id: 'weather_forecast',
      type: 'api',
      executor: 'http_client',
      version: '1.0.0',
      description: 'Get the weather forecast for coordinates',
      mutatesState: false,
      requiresApproval: false,
      config: {
        method: 'GET',
        url_template: 'https://api.example.com/v1/forecast?lat={lat}&lon={lon}',
        headers: { 'X-API-Key': '${WEATHER_API_KEY}' },
      },
      parameters: [
        { name: 'lat', type: 'number', required: true },
        { name: 'lon', type: 'number', required: true },
      ],
      tags: ['weather'],
      examples: ['weather in Paris'],
      source: { path: LABEL.file, tier: 'project' },
      signature: null,
    });
  });

  it.each([
    ['runtime', 'python_runtime', 'subprocess'],
    ['script', 'word_count', 'python_runtime'],
    ['mcp_server', 'files', 'subprocess'],
    ['mcp_tool', 'search_files', 'files'],
    ['directive', 'research', 'llm_runtime'],
    ['knowledge', 'api_notes', 'knowledge_runtime'],
  ])('reads a %s tool', (type, id, executor) => {
    const tool = parse(`tool_id: ${id}\ntool_type: ${type}\nexecutor: ${executor}\n`);
    expect(tool).toMatchObject({ id, type, executor, version: '0.0.0', description: '', config: {}, parameters: [], tags: [], examples: [] });
  });

  it('reads a primitive, which has no executor', () => {
    const tool = parse('tool_id: subprocess\ntool_type: primitive\nconfig: { timeout_ms: 30000 }\n');
    expect(tool.executor).toBeNull();
    expect(tool.config).toEqual({ timeout_ms: 30000 });
  });

  it('accepts executor_id, the Kiwi MCP spelling', () => {
    expect(parse('tool_id: a\ntool_type: script\nexecutor_id: bash_runtime\n').executor).toBe('bash_runtime');
    expect(parse('tool_id: a\ntool_type: script\nexecutor: bash_runtime\nexecutor_id: bash_runtime\n').executor).toBe('bash_runtime');
  });

  it('treats a tool that does not say mutates_state as mutating', () => {
    expect(parse('tool_id: a\ntool_type: script\nexecutor: bash_runtime\n').mutatesState).toBe(true);
  });

  it('keeps an unquoted version as written', () => {
    expect(parse('tool_id: a\ntool_type: script\nexecutor: x\nversion: 1.0\n').version).toBe('1.0');
    expect(parse('tool_id: a\ntool_type: script\nexecutor: x\nversion: 2\n').version).toBe('2');
  });

  it('reads every parameter field of the list form', () => {
    const tool = parse(`tool_id: a
tool_type: script
executor: x
parameters:
  - name: path
    type: string
    required: true
    description: File to read
    default: README.md
    format: path
    access: write
    allow_flags: true
  - { name: mode, type: string, enum: [fast, slow], default: fast }
`);
    expect(tool.parameters).toEqual([
      { name: 'path', type: 'string', required: true, description: 'File to read', default: 'README.md', format: 'path', access: 'write', allowFlags: true },
      { name: 'mode', type: 'string', required: false, enum: ['fast', 'slow'], default: 'fast' },
    ]);
  });

  it('normalises JSON-Schema parameters to the list form', () => {
    const tool = parse(`tool_id: a
tool_type: mcp_tool
executor: files
parameters:
  type: object
  properties:
    path: { type: string, description: Folder, format: path }
    depth: { type: integer, default: 2 }
  required: [path]
`);
    expect(tool.parameters).toEqual([
      { name: 'path', type: 'string', required: true, description: 'Folder', format: 'path' },
      { name: 'depth', type: 'integer', required: false, default: 2 },
    ]);
  });
});

describe('invalid manifests', () => {
  it('reports malformed YAML with file, line:col and the parser reason', () => {
    const issue = only('tool_id: a\ntool_type: script\nconfig: { a: 1\n');
    expect(issue.message).toMatch(/^\.ai\/tools\/x\.yaml:\d+:\d+: invalid YAML: /);
    expect(issue.line).toBeGreaterThanOrEqual(3);
  });

  it('rejects duplicate keys', () => {
    const issue = only('tool_id: a\ntool_type: script\nexecutor: x\ntool_id: b\n');
    expect(issue.message).toMatch(/^\.ai\/tools\/x\.yaml:4:1: invalid YAML: Map keys must be unique/);
  });

  it('rejects an unknown tool_type and suggests the closest', () => {
    const issue = only('tool_id: a\ntool_type: scrpt\nexecutor: x\n');
    expect(issue.field).toBe('tool_type');
    expect(issue.message).toBe(
      '.ai/tools/x.yaml:2:12: tool_type: "scrpt" is not a tool type; write one of primitive, runtime, mcp_server, mcp_tool, script, api, directive, knowledge, thread (did you mean "script"?)',
    );
  });

  it('rejects a missing executor and says what to write', () => {
    const issue = only('tool_id: a\ntool_type: api\n');
    expect(issue.field).toBe('executor');
    expect(issue.message).toContain('executor: is missing; a api tool must name the tool that runs it, e.g. executor: http_client');
  });

  it('rejects a missing tool_type', () => {
    const issue = only('tool_id: a\nexecutor: x\n');
    expect(issue.message).toContain('tool_type: is missing; write one of primitive, runtime');
  });

  it('takes a parameter type it does not know as any value, with a warning at its path naming the nearest type', () => {
    const result = parseToolManifest('tool_id: a\ntool_type: script\nexecutor: x\nparameters:\n  - { name: city, type: strng }\n', LABEL, 'project');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.parameters).toEqual([{ name: 'city', type: 'any', required: false }]);
    expect(result.warnings?.map((w) => w.message)).toEqual([expect.stringContaining('parameters[0].type: parameter `city`: its type "strng" is not one of string, number, integer, boolean, array, object; any value is taken (did you mean "string"?)')]);
    expect(result.warnings?.[0]?.line).toBe(5);
  });

  it('reads the types catalogs write: any case, Python names, `any`, a union of several, none at all', () => {
    const result = parseToolManifest(
      'tool_id: a\ntool_type: script\nexecutor: x\nparameters:\n  type: object\n  properties:\n    a: { type: String }\n    b: { type: int }\n    c: { type: float }\n    d: { type: any }\n    e: { description: anything }\n    f: { anyOf: [{ type: string }, { type: integer }] }\n',
      LABEL,
      'project',
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.parameters.map((p) => [p.name, p.type])).toEqual([['a', 'string'], ['b', 'integer'], ['c', 'number'], ['d', 'any'], ['e', 'any'], ['f', 'any']]);
    // Each leniency is said (`kiwi tools validate` prints them); a plain `any` or no type at all is JSON Schema's own "any value".
    const warned = result.warnings?.map((w) => w.message).join('\n') ?? '';
    expect(warned).toMatch(/`a`: its type "String" is read as string/);
    expect(warned).toMatch(/`b`: its type "int" is read as integer/);
    expect(warned).toMatch(/`c`: its type "float" is read as number/);
    expect(warned).toMatch(/`f`: its type \["string","integer"\] is not one type; any value is taken/);
    expect(warned).not.toMatch(/`[de]`/);
  });

  it('keeps a default its enum does not list, and a name in any script, with a warning for the default', () => {
    const result = parseToolManifest('tool_id: a\ntool_type: script\nexecutor: x\nparameters:\n  type: object\n  properties:\n    unit: { type: string, enum: [celsius, fahrenheit], default: Kelvin }\n    größe: { type: integer }\n    名称: { type: string }\n', LABEL, 'project');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.parameters.map((p) => p.name)).toEqual(['unit', 'größe', '名称']);
    expect(result.value.parameters[0]?.default).toBe('Kelvin');
    expect(result.warnings?.map((w) => w.message)).toEqual([expect.stringContaining('its default "Kelvin" is not one of its enum values "celsius", "fahrenheit"; it is kept')]);
  });

  it('refuses a parameter name no tool could use: empty, with control characters, or too long', () => {
    for (const name of ['""', '"a\\u0001b"', `"${'n'.repeat(129)}"`]) {
      expect(only(`tool_id: a\ntool_type: script\nexecutor: x\nparameters:\n  type: object\n  properties:\n    ${name}: { type: string }\n`).message, name).toMatch(/is not a parameter name/);
    }
  });

  it('rejects required names missing from JSON-Schema properties', () => {
    const issue = only('tool_id: a\ntool_type: script\nexecutor: x\nparameters:\n  type: object\n  properties: {}\n  required: [q]\n');
    expect(issue.message).toContain('"q" is required but not among the properties');
  });

  it('rejects an unknown top-level key and suggests the right one', () => {
    const issue = only('tool_id: a\ntool_type: script\nexecuter: x\nexecutor: x\n');
    expect(issue.field).toBe('executer');
    expect(issue.message).toMatch(/^\.ai\/tools\/x\.yaml:3:1: executer: unknown key; remove it or use one of tool_id, .*\(did you mean "executor"\?\)$/);
  });

  it('rejects an unknown parameter key', () => {
    const issue = only('tool_id: a\ntool_type: script\nexecutor: x\nparameters:\n  - { name: q, type: string, requried: true }\n');
    expect(issue.field).toBe('parameters[0].requried');
    expect(issue.message).toContain('(did you mean "required"?)');
  });

  it('rejects a tool id with look-alike characters and suggests the ASCII spelling', () => {
    const issue = only('tool_id: "w\u0435ather"\ntool_type: script\nexecutor: x\n');
    expect(issue.field).toBe('tool_id');
    expect(issue.message).toContain('U+0435 CYRILLIC SMALL LETTER IE (looks like "e")');
    expect(issue.message).toContain('write "weather"');
  });

  it('rejects executor and executor_id that disagree', () => {
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\nexecutor_id: y\n').message).toContain('keep only executor');
  });

  it('rejects primitives that are not built in, and primitives with an executor', () => {
    expect(only('tool_id: ftp\ntool_type: primitive\n').message).toContain('primitives are subprocess, http_client');
    expect(only('tool_id: subprocess\ntool_type: primitive\nexecutor: x\n').message).toContain('a primitive runs itself; remove the executor');
  });

  it('explains YAML 1.2 booleans and quoted booleans', () => {
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\nmutates_state: no\n').message).toContain(
      'mutates_state: expected true or false (no quotes), got "no" (YAML 1.2 reads yes/no/on/off as text); write true or false',
    );
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\nmutates_state: "false"\n').message).toContain('remove the quotes');
  });

  it('rejects wrong value types with what to write', () => {
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\ntags: web\n').message).toContain('tags: expected a list of strings, e.g. [weather, forecast], got "web"');
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\nconfig: [1]\n').message).toContain('config: expected a mapping of settings');
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\ndescription:\n').message).toContain('description: has no value');
  });

  it('rejects parameters of the wrong shape, and duplicate parameter names', () => {
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\nparameters: 3\n').message).toContain('parameters: expected a list of {name, type, required} entries, or a JSON Schema object');
    expect(only('tool_id: a\ntool_type: script\nexecutor: x\nparameters:\n  - { name: q, type: string }\n  - { name: q, type: string }\n').message).toContain(
      'parameter "q" is declared twice',
    );
  });

  it('rejects an empty file and a top-level list', () => {
    expect(only('').message).toContain('the manifest is empty');
    expect(only('- a\n').message).toContain('a manifest is a mapping');
  });

  it('reports every problem of a file at once', () => {
    const found = issues('tool_id: a\ntool_type: scrpt\nexecutor: x\ncolour: red\nparameters:\n  - { name: q, type: string, enum: [] }\n');
    expect(found.map((i) => i.field).sort()).toEqual(['colour', 'parameters[0].enum', 'tool_type']);
  });
});

describe('signed manifests', () => {
  const text = 'tool_id: a\ntool_type: script\nexecutor: x\n';

  it('loads a manifest whose signature matches', () => {
    const tool = parse(signText('tool', text, new Date('2026-01-01T00:00:00Z')));
    expect(tool.signature?.timestamp).toBe('2026-01-01T00:00:00Z');
  });

  it('rejects a manifest changed after signing', () => {
    const signed = signText('tool', text, new Date('2026-01-01T00:00:00Z'));
    const issue = only(signed.replace('executor: x', 'executor: y'));
    expect(issue.message).toContain('signature does not match the content; run `kiwi sign <file>` after reviewing the change');
  });
});

describe('messages for list elements', () => {
  it('describes a bad element of a list by its index', () => {
    const issue = only('tool_id: a\ntool_type: script\nexecutor: x\ntags: [web, 3]\n');
    expect(issue.field).toBe('tags[1]');
    expect(issue.message).toContain('tags[1]: expected a string, got 3; put it in quotes');
  });
});
