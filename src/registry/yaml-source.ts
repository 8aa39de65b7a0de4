/** YAML parsing that keeps positions, so every error can say file:line:col. */
import { CST, LineCounter, Parser, Scalar, isMap, isNode, isScalar, parseDocument, type Document, type YAMLError } from 'yaml';
import { textPosition } from '../base/text-position.js';
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
  /** Where a scalar's text starts: inside its quotes, for a quoted one. */
  scalarStart(path: ReadonlyArray<PropertyKey>): Position | undefined;
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
    return { ok: false, errors: yamlProblems(text, doc.errors, startLine).map((p) => ({ line: p.line, column: p.column, text: `invalid YAML: ${p.reason}` })) };
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
      scalarStart: (path) => {
        const node = doc.getIn(path as unknown[], true);
        if (!isScalar(node) || !node.range) return undefined;
        const quoted = node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE;
        return position(node.range[0] + (quoted ? 1 : 0));
      },
    },
  };
}

/** The first error of a failed parse as one message: `file:line:col: invalid YAML: …`. */
export function yamlFailure(shown: string, errors: readonly IssueInput[]): string {
  const e = errors[0];
  return `${shown}${e?.line === undefined ? '' : `:${e.line}:${e.column ?? 1}`}: ${e?.text ?? 'invalid YAML'}`;
}

interface YamlProblem extends Position {
  /** What is wrong, in words, without the position. */
  reason: string;
}

/**
 * The parser's errors in words, at most 10. The parser notices an unclosed `[` or `{` only where
 * the text stops fitting, often lines later; such an error is moved to the bracket that was left
 * open and says where the parser noticed it. `startLine` is the file line the text starts on.
 */
function yamlProblems(text: string, errors: readonly YAMLError[], startLine = 1): YamlProblem[] {
  const at = (offset: number): Position => {
    const pos = textPosition(text, offset);
    return { line: pos.line + startLine - 1, column: pos.column };
  };
  const openers = unclosedFlowOpeners(text);
  return errors.slice(0, MAX_REPORTED_ERRORS).map((error) => {
    const noticed = at(error.pos[0]);
    if (error.code === 'MULTIPLE_DOCS') return { ...noticed, reason: 'a second document starts here ("---"); keep one document per file' };
    if (error.code === 'DUPLICATE_KEY') return { ...noticed, reason: duplicateKey(text, error.pos[0]) };
    const reason = firstLine(error.message);
    // The innermost bracket still open where the error was noticed, each named once.
    const opener = openers.findLast((o) => o.offset <= error.pos[0]);
    if (opener === undefined) return { ...noticed, reason };
    openers.splice(openers.indexOf(opener), 1);
    const opened = at(opener.offset);
    const what = opener.char === '[' ? 'list' : 'mapping';
    return {
      ...opened,
      reason: `the "${opener.char}" opened at line ${opened.line}, column ${opened.column} is not closed; end that ${what} with "${CLOSING[opener.char]}" (the parser noticed at line ${noticed.line}, column ${noticed.column}: ${reason})`,
    };
  });
}

const CLOSING = { '[': ']', '{': '}' } as const;

interface FlowOpener {
  char: '[' | '{';
  offset: number;
}

/** Every `[` and `{` of the text without its own closing bracket, in the order they were opened. */
function unclosedFlowOpeners(text: string): FlowOpener[] {
  const found: FlowOpener[] = [];
  const check = (token: CST.Token | null | undefined): void => {
    if (token?.type !== 'flow-collection') return;
    const char = token.start.source === '[' ? '[' : '{';
    if (!token.end.some((t) => t.source === CLOSING[char])) found.push({ char, offset: token.start.offset });
  };
  for (const token of new Parser().parse(text)) {
    if (token.type !== 'document') continue;
    CST.visit(token, (item) => {
      check(item.key);
      check(item.value);
    });
  }
  return found.sort((a, b) => a.offset - b.offset);
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
