import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { importOpenApi, snakeCase } from '../../src/registry/openapi-import.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

/** The OpenAPI importer on the public example documents `@readme/oas-examples` ships (3.0 and 3.1), and on small documents made for one rule each. */

const EXAMPLES = path.join(REPO_ROOT, 'node_modules', '@readme', 'oas-examples');
const documents = ['3.0', '3.1'].flatMap((v) => readdirSync(path.join(EXAMPLES, v, 'json')).filter((f) => f.endsWith('.json')).map((f) => path.join(EXAMPLES, v, 'json', f)));
const read = (file: string): unknown => JSON.parse(readFileSync(file, 'utf8'));
const manifest = (text: string) => parse(text) as { tool_id: string; mutates_state: boolean; config: Record<string, any>; parameters: Record<string, any>[] };

const doc = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ openapi: '3.0.3', info: { title: 'T', version: '1' }, servers: [{ url: 'https://api.example.com/v1' }], paths, ...extra });

describe('importOpenApi on the public example documents', () => {
  it(`imports every operation of ${documents.length} documents as a valid manifest, or says why one was left out`, () => {
    let tools = 0;
    for (const file of documents) {
      const imported = importOpenApi(read(file), { name: 'api', server: 'https://api.example.com', source: path.basename(file) });
      for (const tool of imported.tools) {
        const checked = parseToolManifest(tool.text, { file: `${tool.id}.yaml`, display: `${path.basename(file)} ${tool.operation}` }, 'project');
        expect(checked.ok ? [] : checked.issues.map((i) => i.message), `${path.basename(file)} ${tool.operation}`).toEqual([]);
        tools++;
      }
      for (const line of imported.skipped) expect(line).toMatch(/^[A-Z]+ \/\S*: |^\/\S*: /);
    }
    expect(tools).toBeGreaterThan(200);
  });

  it('is the same every time (a second import changes nothing)', () => {
    for (const file of documents.slice(0, 10)) {
      const options = { name: 'api', server: 'https://api.example.com', source: 'x.json' };
      expect(importOpenApi(read(file), options)).toEqual(importOpenApi(read(file), options));
    }
  });
});

describe('importOpenApi, rule by rule', () => {
  it('reads path, query and required header parameters, maps names a template cannot hold, and leaves an optional header out', () => {
    const { tools } = importOpenApi(
      doc({
        '/items/{item-id}': {
          parameters: [{ name: 'item-id', in: 'path', required: true, schema: { type: 'integer' } }],
          get: {
            operationId: 'getItem',
            summary: 'Get one item',
            parameters: [
              { name: 'page[size]', in: 'query', schema: { type: 'integer', default: 20 } },
              { name: 'X-Tenant', in: 'header', required: true, schema: { type: 'string' } },
              { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
            ],
          },
        },
      }),
      { name: 'shop', source: 't.json' },
    );
    const m = manifest(tools[0]?.text ?? '');
    expect(m.tool_id).toBe('shop_get_item');
    expect(m.mutates_state).toBe(false);
    expect(m.config).toEqual({ method: 'GET', url_template: '${SHOP_URL:-https://api.example.com/v1}/items/{item_id}', headers: { 'X-Tenant': '{X_Tenant}' }, query: { 'page[size]': '{page_size}' } });
    expect(m.parameters.map((p) => [p.name, p.type, p.required])).toEqual([['item_id', 'integer', true], ['page_size', 'integer', false], ['X_Tenant', 'string', true]]);
  });

  it('reads security schemes as headers or a query parameter from the environment, and none where auth is optional', () => {
    const schemes = { bearer: { type: 'http', scheme: 'bearer' }, basic: { type: 'http', scheme: 'basic' }, key: { type: 'apiKey', in: 'header', name: 'X-Key' }, q: { type: 'apiKey', in: 'query', name: 'key' }, jar: { type: 'apiKey', in: 'cookie', name: 'sid' } };
    const op = (security: unknown) => ({ get: { operationId: 'op', security } });
    const configOf = (security: unknown) => {
      const r = importOpenApi(doc({ '/x': op(security) }, { components: { securitySchemes: schemes } }), { name: 'svc', source: 't.json' });
      return r.tools[0] === undefined ? r.skipped : manifest(r.tools[0].text).config;
    };
    expect(configOf([{ bearer: [] }])).toMatchObject({ headers: { Authorization: 'Bearer ${SVC_TOKEN}' } });
    expect(configOf([{ basic: [] }])).toMatchObject({ headers: { Authorization: 'Basic ${SVC_BASIC_AUTH}' } });
    expect(configOf([{ key: [] }])).toMatchObject({ headers: { 'X-Key': '${SVC_API_KEY}' } });
    expect(configOf([{ q: [] }])).toMatchObject({ query: { key: '${SVC_API_KEY}' } });
    expect(configOf([{ jar: [] }])).toEqual(['GET /x: its API key goes in a cookie ("sid"), which cannot be sent']);
    expect(configOf([{}, { bearer: [] }])).not.toHaveProperty('headers');
  });

  it('takes a server variable default, and refuses a document it cannot import, saying what to do', () => {
    const vars = importOpenApi(doc({ '/x': { get: {} } }, { servers: [{ url: 'https://{region}.example.com', variables: { region: { default: 'eu' } } }] }), { name: 'geo', source: 't.json' });
    expect(manifest(vars.tools[0]?.text ?? '').config['url_template']).toBe('${GEO_URL:-https://eu.example.com}/x');
    const fails = (value: unknown, name = 'api') => {
      try {
        importOpenApi(value, { name, source: 'spec.json' });
      } catch (error) {
        return isKiwiError(error, 'INVALID_INPUT') ? error.message : String(error);
      }
      return 'imported';
    };
    expect(fails({ swagger: '2.0', paths: {} })).toMatch(/only OpenAPI 3\.0 and 3\.1 .*Swagger 2\.0: convert it to OpenAPI 3 first/);
    expect(fails(doc({}, { servers: [{ url: '/relative' }] }))).toMatch(/names no absolute server URL .*--server/);
    expect(fails(doc({}), 'Bad Name')).toMatch(/must be 1 to 40 lower-case letters/);
    expect(fails('not an object')).toMatch(/not an OpenAPI document/);
  });

  it('keeps a parameter or body field named __proto__ as its own key in the templates', () => {
    const spec = JSON.parse('{"/x":{"post":{"operationId":"post","parameters":[{"name":"__proto__","in":"query","schema":{"type":"string"}}],"requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{"__proto__":{"type":"string"},"ok":{"type":"string"}}}}}}}}}');
    const m = manifest(importOpenApi(doc(spec), { name: 'p', source: 't.json' }).tools[0]?.text ?? '');
    expect(Object.keys(m.config['query'])).toEqual(['__proto__']);
    expect(Object.keys(m.config['body_template'])).toEqual(['__proto__', 'ok']);
    expect(Object.getPrototypeOf(m.config['body_template'])).toBe(Object.prototype);
  });

  it('makes ids in snake case, once each, from the operation id or the method and path', () => {
    expect(snakeCase('getPetById')).toBe('get_pet_by_id');
    const r = importOpenApi(doc({ '/a/{id}': { get: {}, delete: { operationId: 'removeIt' } }, '/b': { get: { operationId: 'remove-it' } } }), { name: 'x', source: 't.json' });
    expect(r.tools.map((t) => t.id)).toEqual(['x_get_a_id', 'x_remove_it', 'x_remove_it_2']);
  });
});
