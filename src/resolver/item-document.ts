import { createHash } from 'node:crypto';
import { directiveSteps } from '../registry/directive-steps.js';
import type { ItemKind } from '../registry/item-tools.js';
import type { Directive, Knowledge } from '../registry/types.js';
import { textHead } from '../base/text-cut.js';
import { oneLine, splitWords } from '../registry/tool-document.js';

/** Bump when the document text changes shape: every item then re-embeds on the next sync. */
export const ITEM_DOCUMENT_VERSION = 1;

/** The share of a knowledge entry's body that is indexed: its opening says what it is about. */
const MAX_BODY_CHARS = 600;
const MAX_STEPS = 20;
const MAX_DOCUMENT_CHARS = 4_000;
/** What is embedded is shorter still: the sentence encoder's cost grows faster than the text. */
const MAX_EMBED_CHARS = 400;

/** A directive or knowledge entry as the items table stores it. */
export interface ItemDocument {
  /** `directive:NAME` or `knowledge:ID`: one table holds both, and their ids may coincide. */
  rowId: string;
  doc: string;
  embedText: string;
  hash: string;
}

export function itemRowId(kind: ItemKind, id: string): string {
  return `${kind}:${id}`;
}

/** The kind and id of a row id; undefined for a row this version did not write. */
export function parseItemRowId(rowId: string): { kind: ItemKind; id: string } | undefined {
  const colon = rowId.indexOf(':');
  const kind = rowId.slice(0, colon);
  return kind === 'directive' || kind === 'knowledge' ? { kind, id: rowId.slice(colon + 1) } : undefined;
}

/**
 * What a directive is called, what it is for, what it takes and the steps it goes through. The
 * first line names the kind, so an intent that says "directive" finds directives by that word too.
 */
export function directiveDocument(directive: Directive, embedderId: string): ItemDocument {
  const head = [`directive: ${splitWords(directive.name)}`, oneLine(directive.description)];
  if (directive.category) head.push(`category: ${oneLine(directive.category)}`);
  const rest: string[] = [];
  for (const input of directive.inputs ?? []) {
    const about = oneLine(input.description);
    rest.push(`${splitWords(input.name)}${about ? `: ${about}` : ''}`);
  }
  const steps = directiveSteps(directive).slice(0, MAX_STEPS);
  if (steps.length > 0) rest.push(`steps: ${steps.map((s) => splitWords(s.name)).join(', ')}`);
  for (const step of steps) {
    const about = oneLine(step.description);
    if (about) rest.push(about);
  }
  return document('directive', directive.name, head, rest, embedderId);
}

/** What an entry is called, its title, kind, category and tags, and the opening of its body. */
export function knowledgeDocument(entry: Knowledge, embedderId: string): ItemDocument {
  const head = [`knowledge: ${splitWords(entry.id)}`, oneLine(entry.title)];
  const tags = entry.tags.map(oneLine).filter(Boolean);
  if (tags.length > 0) head.push(`tags: ${tags.join(', ')}`);
  const rest = [`${oneLine(entry.entryType)}${entry.category ? `, ${oneLine(entry.category)}` : ''}`];
  const opening = bodyOpening(entry.body);
  if (opening) rest.push(opening);
  return document('knowledge', entry.id, head, rest, embedderId);
}

/**
 * The full-text document has everything; the embedded text only the head (name, purpose, tags):
 * step and body prose would blur what the item is for, and cost more to embed.
 */
function document(kind: ItemKind, id: string, head: string[], rest: string[], embedderId: string): ItemDocument {
  const doc = textHead([...head, ...rest].filter(Boolean).join('\n'), MAX_DOCUMENT_CHARS);
  const embedText = textHead(head.filter(Boolean).join('\n'), MAX_EMBED_CHARS);
  const hash = createHash('sha256').update(`kiwi-item-document/${ITEM_DOCUMENT_VERSION}\0${embedderId}\0`).update(doc).update('\0').update(embedText).digest('hex');
  return { rowId: itemRowId(kind, id), doc, embedText, hash };
}

/** Markdown syntax removed, so the words are what is indexed; cut at a word near the cap. */
function bodyOpening(body: string): string {
  const text = oneLine(
    body
      .slice(0, MAX_BODY_CHARS * 4)
      .replace(/```[\s\S]*?(```|$)/g, ' ')
      .replace(/[`*_#>|[\]()]/g, ' '),
  );
  if (text.length <= MAX_BODY_CHARS) return text;
  const cut = textHead(text, MAX_BODY_CHARS);
  const space = cut.lastIndexOf(' ');
  return space > MAX_BODY_CHARS / 2 ? cut.slice(0, space) : cut;
}
