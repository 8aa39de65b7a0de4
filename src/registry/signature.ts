/**
 * The `kiwi-mcp:validated:<timestamp>:<sha256>` integrity line.
 *
 * Directive and knowledge hashes follow shared/compat/kiwi-mcp/README.md exactly, so files Kiwi
 * MCP signed verify here. For YAML (and code) tools the compat doc fixes only where the line goes;
 * our hash is sha256 of the whole file (LF line ends, BOM dropped) with the signature line
 * removed and any shebang kept. Kiwi MCP hashed tools over a manifest it extracted itself, which
 * cannot be reproduced from the file alone, so tools signed by Kiwi MCP must be re-signed once.
 */
import { createHash } from 'node:crypto';
import { parseDocument } from 'yaml';
import { canonicalJson } from '../base/canonical-json.js';
import { KiwiError } from '../base/errors.js';
import {
  extractDirectiveBlock,
  findSignature,
  splitFrontMatter,
  stripSignatureLine,
  type SignedKind,
} from './markdown-parts.js';

export type { SignedKind } from './markdown-parts.js';
/** Alias used by the CLI. */
export type SignableKind = SignedKind;

export interface SignatureCheck {
  status: 'valid' | 'invalid' | 'unsigned';
  /** The hash the signature line records. */
  expected?: string;
  /** The hash of the content as it is now (absent when it cannot be computed). */
  actual?: string;
  /** Why the hash could not be computed, when it could not. */
  reason?: string;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Hash of a directive file: canonical JSON of name, version and the sha256 of its XML block. */
export function computeDirectiveHash(text: string): string {
  const { text: content } = stripSignatureLine('directive', text);
  const block = extractDirectiveBlock(content);
  if (block === null) {
    throw new KiwiError(
      'INVALID_DIRECTIVE',
      'no <directive name="..." version="..."> ... </directive> block found; add one to the Markdown before signing',
    );
  }
  if (block.name === undefined || block.name === '') {
    throw new KiwiError(
      'INVALID_DIRECTIVE',
      'the <directive> tag has no name; write <directive name="my_directive" version="1.0.0">',
    );
  }
  return sha256Hex(
    canonicalJson({
      directive_name: block.name,
      // Kiwi MCP used 0.0.0 for a directive without a version; the parser rejects those anyway.
      version: block.version ?? '0.0.0',
      xml_hash: sha256Hex(block.xml),
      metadata: {},
    }),
  );
}

/** Hash of a knowledge entry: canonical JSON of id, version, sha256(body) and category/entry_type/tags. */
export function computeKnowledgeHash(text: string): string {
  const { text: content } = stripSignatureLine('knowledge', text);
  const parts = splitFrontMatter(content);
  if (parts === null) {
    throw new KiwiError(
      'INVALID_KNOWLEDGE',
      'no YAML front matter found; start the entry with a line "---", the fields, and another "---"',
    );
  }
  const doc = parseDocument(parts.yaml, { schema: 'core', uniqueKeys: true });
  const data: unknown = doc.errors.length > 0 ? undefined : doc.toJS({ maxAliasCount: 100 });
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new KiwiError('INVALID_KNOWLEDGE', 'the front matter is not a YAML mapping; write "key: value" lines');
  }
  const fields = data as Record<string, unknown>;
  const id = fields['id'] ?? fields['zettel_id'];
  if (id === undefined || id === null) {
    throw new KiwiError('INVALID_KNOWLEDGE', 'the front matter has no id; write "id: my-entry" (or zettel_id:)');
  }
  return sha256Hex(
    canonicalJson({
      id: scalarText(doc, fields['id'] === undefined ? 'zettel_id' : 'id', id),
      version: scalarText(doc, 'version', fields['version'] ?? DEFAULT_KNOWLEDGE_VERSION),
      content_hash: sha256Hex(parts.body),
      metadata: {
        category: fields['category'] ?? '',
        entry_type: fields['entry_type'] ?? '',
        tags: fields['tags'] ?? [],
      },
    }),
  );
}

export const DEFAULT_KNOWLEDGE_VERSION = '1.0.0';

/** A YAML number like `1.0` hashes as written, not as the number 1. */
function scalarText(doc: ReturnType<typeof parseDocument>, key: string, fallback: unknown): unknown {
  const node = doc.get(key, true) as { source?: unknown; value?: unknown } | undefined;
  if (node !== undefined && typeof node.value === 'number' && typeof node.source === 'string') return node.source;
  return typeof fallback === 'number' ? String(fallback) : fallback;
}

/** Hash of a YAML or code tool: the file without its signature line. */
export function computeToolHash(text: string): string {
  return sha256Hex(stripSignatureLine('tool', text).text);
}

export function computeHash(kind: SignedKind, text: string): string {
  if (kind === 'directive') return computeDirectiveHash(text);
  if (kind === 'knowledge') return computeKnowledgeHash(text);
  return computeToolHash(text);
}

export function verifySignature(kind: SignedKind, text: string): SignatureCheck {
  const signature = findSignature(kind, text);
  if (signature === null) return { status: 'unsigned' };
  let actual: string;
  try {
    actual = computeHash(kind, text);
  } catch (error) {
    return { status: 'invalid', expected: signature.hash, reason: error instanceof Error ? error.message : String(error) };
  }
  return { status: actual === signature.hash ? 'valid' : 'invalid', expected: signature.hash, actual };
}

/** `2026-01-24T05:44:46Z`: the timestamp format Kiwi MCP writes. */
export function formatSignatureTimestamp(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Returns the text with a fresh signature line (an old one is replaced). Markdown kinds get it
 * as the first line; tools after the shebang. Throws KiwiError when the hash cannot be computed.
 */
export function signText(kind: SignedKind, text: string, now: Date): string {
  const crlf = /\r\n/.test(text);
  const { text: content } = stripSignatureLine(kind, text);
  const hash = computeHash(kind, content);
  const stamp = formatSignatureTimestamp(now);
  let signed: string;
  if (kind === 'tool') {
    const line = `# kiwi-mcp:validated:${stamp}:${hash}\n`;
    const shebang = /^#![^\n]*\n/.exec(content);
    signed = shebang ? shebang[0] + line + content.slice(shebang[0].length) : line + content;
  } else {
    signed = `<!-- kiwi-mcp:validated:${stamp}:${hash} -->\n${content}`;
  }
  return crlf ? signed.replace(/\n/g, '\r\n') : signed;
}
