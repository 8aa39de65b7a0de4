import { createHash } from 'node:crypto';
import type { Tool } from './types.js';

/**
 * Bump when the document text changes shape: every stored hash then differs, so every tool
 * re-embeds on the next sync instead of keeping vectors of the old text.
 */
export const TOOL_DOCUMENT_VERSION = 2;

/** Manifests are user-written; a runaway description must not become a megabyte of embedder input. */
const MAX_DOCUMENT_CHARS = 16_000;
const MAX_ENUM_VALUES = 50;

/**
 * Splits an identifier into lowercase words: `getWaterQuality` → "get water quality",
 * `fs.read_file` → "fs read file", `HTTPServer2` → "http server 2". Identifiers are written for
 * machines; both the embedder and BM25 match the words people write in intents.
 */
export function splitWords(identifier: string): string {
  return identifier
    .replace(/(\p{Ll})(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .replace(/(\p{L})(\p{N})/gu, '$1 $2')
    .replace(/(\p{N})(\p{L})/gu, '$1 $2')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .toLowerCase();
}

/**
 * The text of a tool that is embedded and full-text indexed: what it is called, what it does,
 * what it takes, and how people ask for it. Deterministic: the same tool gives the same text,
 * so the content hash only changes when something a search could see changed.
 */
export function toolDocument(tool: Tool): string {
  const lines: string[] = [splitWords(tool.id)];
  const description = oneLine(tool.description);
  if (description) lines.push(description);
  for (const parameter of tool.parameters) {
    let line = splitWords(parameter.name);
    const about = oneLine(parameter.description ?? '');
    if (about) line += `: ${about}`;
    const values = enumValues(parameter.enum);
    if (values.length > 0) line += ` (one of: ${values.join(', ')})`;
    lines.push(line);
  }
  const tags = tool.tags.map(oneLine).filter(Boolean);
  if (tags.length > 0) lines.push(`tags: ${tags.join(', ')}`);
  for (const example of tool.examples) {
    const text = oneLine(example);
    if (text) lines.push(text);
  }
  const document = lines.join('\n');
  return document.length > MAX_DOCUMENT_CHARS ? document.slice(0, MAX_DOCUMENT_CHARS) : document;
}

/**
 * The shorter text that is embedded: name, description and examples. Parameter descriptions stay
 * in the full-text side only: USE-lite's cost grows faster than linearly with length (a 270-char
 * document takes ~60 ms, name + description ~11 ms), and they blur what the tool is for.
 */
export function toolEmbeddingText(tool: Tool): string {
  const lines: string[] = [splitWords(tool.id)];
  const description = oneLine(tool.description);
  if (description) lines.push(description);
  for (const example of tool.examples) {
    const text = oneLine(example);
    if (text) lines.push(text);
  }
  const text = lines.join('\n');
  return text.length > MAX_DOCUMENT_CHARS ? text.slice(0, MAX_DOCUMENT_CHARS) : text;
}

/**
 * Identifies what the index holds for a tool: its document as the given embedder sees it.
 * A changed document, a changed model or a changed document format all give a new hash.
 */
export function toolContentHash(tool: Tool, embedderId: string): string {
  return createHash('sha256')
    .update(`kiwi-tool-document/${TOOL_DOCUMENT_VERSION}\0${embedderId}\0`)
    .update(toolDocument(tool))
    .digest('hex');
}

/** Whitespace runs, newlines included, as one space; trimmed. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function enumValues(values: unknown[] | undefined): string[] {
  if (!values) return [];
  const out: string[] = [];
  for (const value of values.slice(0, MAX_ENUM_VALUES)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      const text = oneLine(String(value));
      if (text) out.push(text);
    }
  }
  return out;
}
