import { describe, expect, it } from 'vitest';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import type { Tool } from '../../src/registry/types.js';

const LABEL = { file: '/p/.ai/tools/x.yaml', display: '.ai/tools/x.yaml' };

/** A manifest whose `parameters` is `schema`, written as JSON (JSON is YAML), as a copied MCP `inputSchema` would be. */
function manifest(schema: unknown, extra = ''): string {
  return `tool_id: t\ntool_type: mcp_tool\nexecutor: server\n${extra}parameters: ${JSON.stringify(schema)}\n`;
}

function parse(text: string): Tool {
  const result = parseToolManifest(text, LABEL, 'project');
  if (!result.ok) throw new Error(`expected a valid manifest, got:\n${result.issues.map((i) => i.message).join('\n')}`);
  return result.value;
}

function messages(text: string): string[] {
  const result = parseToolManifest(text, LABEL, 'project');
  if (result.ok) throw new Error('expected the manifest to be rejected');
  return result.issues.map((i) => i.message);
}

describe('JSON Schema parameters as MCP servers and OpenAPI specs write them', () => {
  it('accepts the ToolAlpaca schema with minimum and maximum and keeps the bounds', () => {
    const tool = parse(
      manifest({
        type: 'object',
        properties: {
          countryCode: { type: 'string', description: 'Two-character country code' },
          offset: { maximum: 12, minimum: -12, type: 'integer', default: 0, description: 'utc timezone offset' },
        },
        required: ['countryCode'],
      }),
    );
    expect(tool.parameters).toEqual([
      { name: 'countryCode', type: 'string', required: true, description: 'Two-character country code' },
      { name: 'offset', type: 'integer', required: false, description: 'utc timezone offset', default: 0, minimum: -12, maximum: 12 },
    ]);
  });

  it('ignores keywords it does not model, vendor extensions and unmodelled formats; keeps pattern and modelled formats', () => {
    const tool = parse(
      manifest({
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        title: 'Args',
        additionalProperties: { type: 'string' },
        $defs: { Unit: { enum: ['c', 'f'] } },
        'x-order': 1,
        properties: {
          code: { type: 'string', pattern: '^[A-Z]{2}$', minLength: 2, maxLength: 2, examples: ['CN'], title: 'Code', 'x-nullable': false },
          when: { type: ['string', 'null'], format: 'date-time', deprecated: false },
          day: { type: 'string', format: 'date' },
          size: { type: 'integer', format: 'int32', exclusiveMinimum: 0, multipleOf: 1 },
          tags: { type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true },
        },
        required: ['code'],
      }),
    );
    expect(tool.parameters).toEqual([
      { name: 'code', type: 'string', required: true, pattern: '^[A-Z]{2}$' },
      { name: 'when', type: 'string', required: false, format: 'date-time' },
      { name: 'day', type: 'string', required: false, format: 'date' },
      { name: 'size', type: 'integer', required: false },
      { name: 'tags', type: 'array', required: false, items: { type: 'string' } },
    ]);
  });

  it('keeps bounds only on numbers and a pattern only on strings, as JSON Schema applies them', () => {
    const tool = parse(manifest({ type: 'object', properties: { q: { type: 'string', minimum: 1 }, n: { type: 'number', pattern: 'x' } } }));
    expect(tool.parameters).toEqual([
      { name: 'q', type: 'string', required: false },
      { name: 'n', type: 'number', required: false },
    ]);
  });

  it('accepts bounds and a pattern in the list form too', () => {
    const tool = parse('tool_id: t\ntool_type: script\nexecutor: x\nparameters:\n  - { name: n, type: integer, minimum: 1, maximum: 5 }\n');
    expect(tool.parameters).toEqual([{ name: 'n', type: 'integer', required: false, minimum: 1, maximum: 5 }]);
  });
});

describe('typos inside JSON Schema parameters are still errors', () => {
  it('reports a near miss of a modelled key in a property, with the key to write', () => {
    const found = messages(manifest({ type: 'object', properties: { q: { type: 'string', descripton: 'x' } } }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('parameters.properties.q.descripton: unknown key');
    expect(found[0]).toContain('(did you mean "description"?)');
  });

  it('reports a near miss of required at the top of the schema', () => {
    const found = messages(manifest({ type: 'object', properties: { q: { type: 'string' } }, requried: ['q'] }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('parameters.requried: unknown key; remove it or use one of type, properties, required (did you mean "required"?)');
  });

  it('reports a near miss of a modelled format, so a path parameter cannot lose its checks', () => {
    const found = messages(manifest({ type: 'object', properties: { p: { type: 'string', format: 'pth' } } }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('"pth" is not a parameter format');
    expect(found[0]).toContain('(did you mean "path"?)');
  });

  it('reports the list form\'s required: true inside a JSON Schema property and says where it goes', () => {
    const found = messages(manifest({ type: 'object', properties: { city: { type: 'string', required: true } } }));
    expect(found).toEqual([
      '.ai/tools/x.yaml:4:79: parameters.properties.city.required: in a JSON Schema, required parameters are listed once under parameters.required (e.g. required: [city]); remove it here',
    ]);
  });

  it('reads anyOf/oneOf of one schema and null (an optional value as pydantic writes it) as that schema', () => {
    const tool = parse(
      manifest({
        type: 'object',
        properties: {
          limit: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }], default: null, description: 'How many' },
          mode: { oneOf: [{ type: 'null' }, { type: 'string', enum: ['fast', 'slow'] }], title: 'Mode' },
        },
      }),
    );
    expect(tool.parameters).toEqual([
      { name: 'limit', type: 'integer', required: false, description: 'How many', minimum: 1 },
      { name: 'mode', type: 'string', required: false, enum: ['fast', 'slow'] },
    ]);
    // A real union of two types is not guessed at: any value, with a warning (tool-manifest.test.ts).
    expect(parse(manifest({ type: 'object', properties: { v: { anyOf: [{ type: 'string' }, { type: 'integer' }] } } })).parameters).toEqual([{ name: 'v', type: 'any', required: false }]);
  });

  it('reports a minimum above the maximum', () => {
    const found = messages(manifest({ type: 'object', properties: { n: { type: 'integer', minimum: 5, maximum: 1 } } }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('parameters.properties.n.minimum: minimum 5 is greater than maximum 1; swap them or remove one');
  });

  it('reports a bound that is not a number', () => {
    const found = messages(manifest({ type: 'object', properties: { n: { type: 'integer', minimum: 'one' } } }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('parameters.properties.n.minimum: expected a number, got "one"');
  });

  it('keeps the manifest itself strict: a JSON Schema keyword at the top level is an unknown key', () => {
    const found = messages(manifest({ type: 'object', properties: {} }, 'minimum: 1\n'));
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^\.ai\/tools\/x\.yaml:4:1: minimum: unknown key; remove it or use one of tool_id, /);
  });
});

describe('the fields of an object parameter', () => {
  it('are read one level deep, loosely, for the filler; what cannot be read is left out', () => {
    const yaml = JSON.stringify({
      tool_id: 'update_profile', tool_type: 'api', executor: 'http_client', version: '1.0.0', description: 'Update a profile',
      parameters: { type: 'object', properties: { profile: { type: 'object', properties: { name: { type: 'string', description: 'Full name' }, age: { type: ['integer', 'null'] }, plan: { enum: ['free', 'pro'] }, bad: 'x', nested: { type: 'object', properties: { deep: { type: 'string' } } } }, required: ['name'] }, note: { type: 'string', properties: { x: {} } } } },
    });
    const parsed = parseToolManifest(yaml, { file: 't.yaml', display: 't.yaml' }, 'project');
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const [profile, note] = parsed.value.parameters;
    expect(profile?.properties).toEqual([
      { name: 'name', type: 'string', required: false, description: 'Full name' },
      { name: 'age', type: 'integer', required: false },
      { name: 'plan', type: 'any', required: false, enum: ['free', 'pro'] },
      { name: 'nested', type: 'object', required: false },
    ]);
    expect(note?.properties).toBeUndefined();
  });
});
