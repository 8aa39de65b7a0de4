/**
 * Splitting registry files into the parts that are parsed and hashed. The rules copy Kiwi MCP
 * (see shared/compat/kiwi-mcp/README.md) so that files it signed verify here.
 */
import type { Signature } from './types.js';

export type SignedKind = 'directive' | 'knowledge' | 'tool';

const MARKDOWN_SIGNATURE = /^<!-- kiwi-mcp:validated:(.*?):([a-f0-9]{64}) -->/;
const MARKDOWN_SIGNATURE_LINE = /^<!-- kiwi-mcp:validated:[^>]+-->[ \t]*(?:\n|$)/;
/** Code and YAML tools: the comment may follow a shebang line. */
const TOOL_SIGNATURE = /^(#![^\n]*\n)?# kiwi-mcp:validated:(.*?):([a-f0-9]{64})[ \t]*(?:\n|$)/;
const DIRECTIVE_START = /<directive[^>]*>/;
const DIRECTIVE_END = '</directive>';

/** Kiwi MCP read files in text mode, so CRLF and CR hashed as LF; a leading BOM is not content. */
export function normalizeText(text: string): string {
  return text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
}

export function findSignature(kind: SignedKind, text: string): Signature | null {
  const normalized = normalizeText(text);
  if (kind === 'tool') {
    const match = TOOL_SIGNATURE.exec(normalized);
    return match ? { timestamp: match[2] ?? '', hash: match[3] ?? '' } : null;
  }
  const match = MARKDOWN_SIGNATURE.exec(normalized);
  return match ? { timestamp: match[1] ?? '', hash: match[2] ?? '' } : null;
}

export interface Stripped {
  text: string;
  /** Lines removed before the rest of the text, to map positions back to the file. */
  removedLines: number;
}

/** The normalized text without its signature line (the shebang, if any, stays). */
export function stripSignatureLine(kind: SignedKind, text: string): Stripped {
  const normalized = normalizeText(text);
  if (kind === 'tool') {
    const match = TOOL_SIGNATURE.exec(normalized);
    if (!match) return { text: normalized, removedLines: 0 };
    return { text: (match[1] ?? '') + normalized.slice(match[0].length), removedLines: 1 };
  }
  const match = MARKDOWN_SIGNATURE_LINE.exec(normalized);
  if (!match) return { text: normalized, removedLines: 0 };
  return { text: normalized.slice(match[0].length), removedLines: 1 };
}

export interface DirectiveBlock {
  xml: string;
  /** Index of the block's first character in the text it was taken from. */
  offset: number;
  name?: string;
  version?: string;
}

/** From the first `<directive` tag to the last `</directive>`, as Kiwi MCP hashes it. */
export function extractDirectiveBlock(text: string): DirectiveBlock | null {
  const start = DIRECTIVE_START.exec(text);
  if (!start) return null;
  const end = text.lastIndexOf(DIRECTIVE_END);
  if (end === -1 || end < start.index) return null;
  const raw = text.slice(start.index, end + DIRECTIVE_END.length);
  const xml = raw.trim();
  const block: DirectiveBlock = { xml, offset: start.index + (raw.length - raw.trimStart().length) };
  const name = startTagAttribute(start[0], 'name');
  const version = startTagAttribute(start[0], 'version');
  if (name !== undefined) block.name = name;
  if (version !== undefined) block.version = version;
  return block;
}

function startTagAttribute(tag: string, attribute: string): string | undefined {
  const match = new RegExp(`\\s${attribute}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`).exec(tag);
  if (!match) return undefined;
  return decodeXmlEntities(match[1] ?? match[2] ?? '');
}

function decodeXmlEntities(value: string): string {
  return value.replace(/&(lt|gt|amp|quot|apos|#x[0-9a-fA-F]+|#[0-9]+);/g, (_, entity: string) => {
    if (entity === 'lt') return '<';
    if (entity === 'gt') return '>';
    if (entity === 'amp') return '&';
    if (entity === 'quot') return '"';
    if (entity === 'apos') return "'";
    const code = entity.startsWith('#x') ? Number.parseInt(entity.slice(2), 16) : Number.parseInt(entity.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : '';
  });
}

export interface FrontMatter {
  yaml: string;
  /** 1-based line of the first YAML line, in the text given. */
  yamlLine: number;
  /** The Markdown after the closing `---`, trimmed (what Kiwi MCP hashed as the content). */
  body: string;
}

/** YAML front matter between a first line `---` and the next line that is `---` (or `...`). */
export function splitFrontMatter(text: string): FrontMatter | null {
  const open = /^---[ \t]*\n/.exec(text);
  if (!open) return null;
  const rest = text.slice(open[0].length);
  const close = /^(?:---|\.\.\.)[ \t]*$/m.exec(rest);
  if (!close) return null;
  return {
    yaml: rest.slice(0, close.index),
    yamlLine: 2,
    body: rest.slice(close.index + close[0].length).trim(),
  };
}

/** 1-based line and column of an index into a text. */
export function lineColumn(text: string, index: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < index && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: index - lineStart + 1 };
}
