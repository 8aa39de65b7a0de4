import { stringify } from 'yaml';
import { KiwiError } from '../base/errors.js';
import { setOwn } from '../base/plain-object.js';
import { deref, isObject, summaryText, schemaFields, type Json } from './openapi-schema.js';

/**
 * An OpenAPI 3.x document as `api` tool manifests, one per operation: the operation's id (else its
 * method and path) as the tool id under the API's name, its summary as the description, its path,
 * query and header parameters and its JSON body's fields as the parameters, its server as the base
 * URL (which `${NAME_URL}` can move), and its security as headers or a query parameter read from
 * the environment (`${NAME_TOKEN}`, `${NAME_API_KEY}`…), never written into the file. GET, HEAD and
 * OPTIONS are read-only; every other method mutates state. What it cannot express is left out and
 * said: a body that is not JSON, a cookie, an optional header, an external `$ref`.
 */

export interface ImportedTool {
  id: string;
  /** `METHOD /path`, as the document writes it. */
  operation: string;
  /** The manifest's YAML. */
  text: string;
}

export interface OpenApiImport {
  title: string;
  tools: ImportedTool[];
  /** `METHOD /path: why`, for each operation not imported. */
  skipped: string[];
}

export interface OpenApiImportOptions {
  /** The API's name: the tools' folder and id prefix, and the prefix of its environment variables. */
  name: string;
  /** The base URL, instead of the document's first server. */
  server?: string;
  /** Where the document came from, for each manifest's first line. */
  source: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
const READ_ONLY = new Set(['get', 'head', 'options']);
export const MAX_OPERATIONS = 2_000;
export const API_NAME = /^[a-z][a-z0-9_]{0,39}$/;

/** `getPetById` → `get_pet_by_id`; anything outside a tool id's letters becomes `_`. */
export function snakeCase(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

export function importOpenApi(doc: unknown, options: OpenApiImportOptions): OpenApiImport {
  if (!isObject(doc)) throw new KiwiError('INVALID_INPUT', `${options.source} is not an OpenAPI document: it is not a JSON or YAML object`);
  const version = doc['openapi'];
  if (typeof version !== 'string' || !/^3\.[01]\./.test(version)) {
    const swagger = typeof doc['swagger'] === 'string' ? ` (this is Swagger ${doc['swagger']}: convert it to OpenAPI 3 first, e.g. with swagger2openapi)` : '';
    throw new KiwiError('INVALID_INPUT', `${options.source}: only OpenAPI 3.0 and 3.1 documents are imported; "openapi" is ${JSON.stringify(version ?? null)}${swagger}`);
  }
  if (!API_NAME.test(options.name)) throw new KiwiError('INVALID_INPUT', `the API's name "${options.name}" must be 1 to 40 lower-case letters, digits and "_", starting with a letter (e.g. petstore)`);
  const info = isObject(doc['info']) ? doc['info'] : {};
  const title = summaryText(info['title'], 80) ?? options.name;
  const base = baseUrl(doc, options);
  const envPrefix = options.name.toUpperCase();
  const paths = isObject(doc['paths']) ? doc['paths'] : {};
  const tools: ImportedTool[] = [];
  const skipped: string[] = [];
  const ids = new Set<string>();
  for (const [route, rawItem] of Object.entries(paths)) {
    const item = deref(doc, rawItem);
    if (item === undefined) {
      skipped.push(`${route}: its path item is an external or missing $ref`);
      continue;
    }
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const operation = `${method.toUpperCase()} ${route}`;
      if (tools.length >= MAX_OPERATIONS) throw new KiwiError('INVALID_INPUT', `${options.source} has more than ${MAX_OPERATIONS} operations; import a smaller document, or split it by tag`);
      try {
        const id = uniqueId(`${options.name}_${snakeCase(typeof op['operationId'] === 'string' ? op['operationId'] : `${method}_${route}`)}`.slice(0, 120), ids);
        const manifest = operationManifest(doc, { id, method, route, op, pathParams: item['parameters'], base, envPrefix, apiName: options.name });
        tools.push({ id, operation, text: `# Imported from ${options.source} (${operation}) by \`kiwi tools import openapi\`; importing it again rewrites this file.\n${stringify(manifest, { lineWidth: 0 })}` });
      } catch (error) {
        if (!(error instanceof Skip)) throw error;
        skipped.push(`${operation}: ${error.message}`);
      }
    }
  }
  return { title, tools, skipped };
}

/** An operation the importer cannot express: left out, and said why. */
class Skip extends Error {}

function baseUrl(doc: Json, options: OpenApiImportOptions): string {
  const envName = `${options.name.toUpperCase()}_URL`;
  let url = options.server;
  if (url === undefined) {
    const first = Array.isArray(doc['servers']) ? doc['servers'].find(isObject) : undefined;
    const written = typeof first?.['url'] === 'string' ? first['url'] : undefined;
    if (written === undefined || !/^https?:\/\//i.test(written)) {
      throw new KiwiError('INVALID_INPUT', `${options.source} names no absolute server URL (servers[0].url is ${JSON.stringify(written ?? null)}); give one with --server https://api.example.com/v1`);
    }
    // Server variables take their defaults: `{region}` → its `default`.
    const variables = isObject(first?.['variables']) ? first['variables'] : {};
    url = written.replace(/\{([^}]+)\}/g, (whole, name: string) => {
      const v = variables[name];
      return isObject(v) && typeof v['default'] === 'string' ? v['default'] : whole;
    });
  }
  if (/[{}]/.test(url)) throw new KiwiError('INVALID_INPUT', `${options.source}: the server URL ${url} has a variable without a default; give one with --server`);
  if (!/^https?:\/\/[^/]/i.test(url)) throw new KiwiError('INVALID_INPUT', `--server must be an http or https URL, got ${JSON.stringify(url)}`);
  // The operator can move it, as the demo's npm tool does.
  return `\${${envName}:-${url.replace(/\/+$/, '').replaceAll('}', '%7D')}}`;
}

function uniqueId(wanted: string, taken: Set<string>): string {
  let id = wanted.replace(/_+$/, '');
  for (let n = 2; taken.has(id); n++) id = `${wanted}_${n}`;
  taken.add(id);
  return id;
}

interface OperationInput {
  id: string;
  method: (typeof METHODS)[number];
  route: string;
  op: Json;
  pathParams: unknown;
  base: string;
  envPrefix: string;
  apiName: string;
}

// Names below come from the document (anyone's): setOwn keeps `__proto__` an own key, never the prototype.
function operationManifest(doc: Json, input: OperationInput): Json {
  const { op, method, route } = input;
  const names = new Set<string>();
  const parameters: Json[] = [];
  const query: Record<string, string> = {};
  const headers: Record<string, string> = {};
  let path = route.replaceAll('{', '{{').replaceAll('}', '}}');
  const given = [...(Array.isArray(input.pathParams) ? input.pathParams : []), ...(Array.isArray(op['parameters']) ? op['parameters'] : [])];
  // An operation's parameter overrides the path item's of the same name and place.
  const byKey = new Map<string, Json>();
  for (const raw of given) {
    const p = deref(doc, raw);
    if (p === undefined) throw new Skip('a parameter is an external or missing $ref');
    byKey.set(`${String(p['in'])}:${String(p['name'])}`, p);
  }
  for (const p of byKey.values()) {
    const wire = String(p['name']);
    const place = p['in'];
    const required = place === 'path' || p['required'] === true;
    if (place === 'cookie') throw new Skip(`cookie parameter "${wire}" (a cookie cannot be sent)`);
    if (place === 'header' && !required) continue; // an optional header cannot be left out of a template
    const name = paramName(wire, names);
    parameters.push({ name, ...schemaFields(doc, deref(doc, p['schema'])), required, ...describe(p['description']) });
    if (place === 'path') path = path.replaceAll(`{{${wire}}}`, `{${name}}`);
    else if (place === 'query') setOwn(query, wire, `{${name}}`);
    else if (place === 'header') setOwn(headers, wire, `{${name}}`);
  }
  const body = requestBody(doc, op, names, parameters);
  for (const [header, value] of Object.entries(auth(doc, op, input.envPrefix, query))) setOwn(headers, header, value);
  const summary = summaryText(op['summary']) ?? summaryText(op['description']) ?? `${method.toUpperCase()} ${route}`;
  const tags = [input.apiName, ...(Array.isArray(op['tags']) ? op['tags'].filter((t): t is string => typeof t === 'string').map(snakeCase).filter((t) => t !== '') : [])].slice(0, 10);
  return {
    tool_id: input.id,
    tool_type: 'api',
    executor: 'http_client',
    version: '1.0.0',
    description: summary,
    mutates_state: !READ_ONLY.has(method),
    tags,
    ...(summaryText(op['summary']) ? { examples: [summary.toLowerCase()] } : {}),
    config: {
      method: method.toUpperCase(),
      url_template: `${input.base}${path}`,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(Object.keys(query).length > 0 ? { query } : {}),
      ...(body === undefined ? {} : { body_template: body }),
    },
    parameters,
  };
}

const describe = (text: unknown): Json => {
  const d = summaryText(text, 200);
  return d === undefined ? {} : { description: d };
};

/** A template's name for a parameter the API names `X-Request-ID` or `page[size]`: letters, digits and `_`, once each. */
function paramName(wire: string, taken: Set<string>): string {
  let base = wire.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
  if (base === '' || /^[0-9]/.test(base)) base = `p_${base}`;
  let name = base.slice(0, 64);
  for (let n = 2; taken.has(name); n++) name = `${base.slice(0, 60)}_${n}`;
  taken.add(name);
  return name;
}

/** The JSON body's template: each top-level field of an object schema a parameter, else the whole body one (`body`). */
function requestBody(doc: Json, op: Json, names: Set<string>, parameters: Json[]): unknown {
  const body = deref(doc, op['requestBody']);
  if (op['requestBody'] !== undefined && body === undefined) throw new Skip('its request body is an external or missing $ref');
  if (body === undefined) return undefined;
  const content = isObject(body['content']) ? body['content'] : {};
  const type = Object.keys(content).find((t) => /^application\/([\w.+-]+\+)?json\b/i.test(t));
  if (type === undefined) {
    const types = Object.keys(content);
    if (types.length === 0) return undefined;
    throw new Skip(`its request body is ${types.join(' or ')}, not JSON`);
  }
  const media = isObject(content[type]) ? content[type] : {};
  const schema = deref(doc, media['schema']);
  const required = body['required'] === true;
  const properties = isObject(schema?.['properties']) ? schema['properties'] : undefined;
  if (properties === undefined || Object.keys(properties).length === 0 || Object.keys(properties).length > 100) {
    const name = paramName('body', names);
    parameters.push({ name, ...schemaFields(doc, schema), required, ...describe(body['description'] ?? schema?.['description']) });
    return `{${name}}`;
  }
  const needed = new Set(Array.isArray(schema?.['required']) ? schema['required'].filter((r): r is string => typeof r === 'string') : []);
  const template: Record<string, string> = {};
  for (const [field, raw] of Object.entries(properties)) {
    const fieldSchema = deref(doc, raw);
    if (fieldSchema?.['readOnly'] === true) continue;
    const name = paramName(field, names);
    parameters.push({ name, ...schemaFields(doc, fieldSchema), required: required && needed.has(field), ...describe(fieldSchema?.['description']) });
    setOwn(template, field, `{${name}}`);
  }
  return template;
}

/** The first security requirement the operation (else the document) names, as headers (or a query parameter) read from the environment. */
function auth(doc: Json, op: Json, prefix: string, query: Record<string, string>): Record<string, string> {
  const requirements = Array.isArray(op['security']) ? op['security'] : Array.isArray(doc['security']) ? doc['security'] : [];
  // An empty requirement ({}) makes auth optional: none is sent.
  if (requirements.length === 0 || requirements.some((r) => isObject(r) && Object.keys(r).length === 0)) return {};
  const first = requirements.find(isObject);
  const schemeName = first === undefined ? undefined : Object.keys(first)[0];
  const components = isObject(doc['components']) ? doc['components'] : {};
  const schemes = isObject(components['securitySchemes']) ? components['securitySchemes'] : {};
  const scheme = schemeName === undefined ? undefined : deref(doc, schemes[schemeName]);
  if (scheme === undefined) return {};
  const type = scheme['type'];
  if (type === 'http' && String(scheme['scheme']).toLowerCase() === 'basic') return { Authorization: `Basic \${${prefix}_BASIC_AUTH}` };
  if (type === 'http' || type === 'oauth2' || type === 'openIdConnect') return { Authorization: `Bearer \${${prefix}_TOKEN}` };
  if (type === 'apiKey' && typeof scheme['name'] === 'string') {
    const value = `\${${prefix}_API_KEY}`;
    if (scheme['in'] === 'header') return { [scheme['name']]: value };
    if (scheme['in'] === 'query') setOwn(query, scheme['name'], value);
    else throw new Skip(`its API key goes in a cookie ("${scheme['name']}"), which cannot be sent`);
  }
  return {};
}
