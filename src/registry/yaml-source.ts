/** YAML parsing that keeps positions, so every error can say file:line:col. */
import { LineCounter, isMap, isNode, isScalar, parseDocument, type Document } from 'yaml';
import { firstLine, type IssueInput } from './validation-error.js';

const MAX_ALIASES = 100;
const MAX_REPORTED_ERRORS = 10;

export interface Position {
  line: number;
  column: number;
}

export interface YamlSource {
  /** The document as plain JS. */
  data: unknown;
  /** Where the node at `path` starts, or its nearest existing ancestor. */
  locate(path: ReadonlyArray<PropertyKey>): Position | undefined;
  /** Where the key `key` of the mapping at `path` is written. */
  locateKey(path: ReadonlyArray<PropertyKey>, key: string): Position | undefined;
  /** The text a plain scalar was written as (`1.0` stays `1.0`, not the number 1). */
  scalarSource(path: ReadonlyArray<PropertyKey>): string | undefined;
}

export type YamlParse = { ok: true; value: YamlSource } | { ok: false; errors: IssueInput[] };

/**
 * Parses one YAML document (YAML 1.2 core schema: `yes`/`no` are strings; duplicate keys are
 * errors). `firstLine` is the file line the text starts on, for front matter.
 */
export function parseYamlSource(text: string, startLine = 1): YamlParse {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    schema: 'core',
    uniqueKeys: true,
    strict: true,
    prettyErrors: true,
    lineCounter,
  });
  const position = (offset: number): Position => {
    const pos = lineCounter.linePos(offset);
    return { line: pos.line + startLine - 1, column: pos.col };
  };
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.slice(0, MAX_REPORTED_ERRORS).map((error) => {
        const pos = position(error.pos[0]);
        const reason =
          error.code === 'MULTIPLE_DOCS'
            ? 'a second document starts here ("---"); keep one document per file'
            : error.code === 'DUPLICATE_KEY'
              ? duplicateKey(text, error.pos[0])
              : firstLine(error.message);
        return { line: pos.line, column: pos.column, text: `invalid YAML: ${reason}` };
      }),
    };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    return { ok: false, errors: [{ text: `invalid YAML: ${error instanceof Error ? firstLine(error.message) : String(error)}` }] };
  }
  return {
    ok: true,
    value: {
      data,
      locate: (path) => locateNode(doc, path, position),
      locateKey: (path, key) => {
        const map = path.length === 0 ? doc.contents : doc.getIn(path as unknown[], true);
        if (isMap(map)) {
          for (const pair of map.items) {
            if (isScalar(pair.key) && String(pair.key.value) === key && pair.key.range) return position(pair.key.range[0]);
          }
        }
        return locateNode(doc, path, position);
      },
      scalarSource: (path) => {
        const node = doc.getIn(path as unknown[], true);
        return isScalar(node) && typeof node.source === 'string' ? node.source : undefined;
      },
    },
  };
}

function locateNode(doc: Document, path: ReadonlyArray<PropertyKey>, position: (offset: number) => Position): Position | undefined {
  for (let length = path.length; length >= 0; length--) {
    const node = length === 0 ? doc.contents : doc.getIn(path.slice(0, length) as unknown[], true);
    if (isNode(node) && node.range) return position(node.range[0]);
  }
  return undefined;
}

/** Names the repeated key; a repeated id usually means two items were pasted into one file. */
function duplicateKey(text: string, offset: number): string {
  const key = /^[^:\n]*/.exec(text.slice(offset))?.[0].trim() ?? '';
  const named = key === '' || key.length > 60 ? 'this key' : `"${key}"`;
  const second = /^(tool_id|id|name)$/.test(key) ? '; a second item starts here — put it in its own file' : '';
  return `Map keys must be unique: ${named} is already set above in the same mapping${second}`;
}
