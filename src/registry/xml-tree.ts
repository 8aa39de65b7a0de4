/** A directive's XML block as a small element tree with offsets, via fast-xml-parser. */
import { XMLParser, XMLValidator } from 'fast-xml-parser';

export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  /** The element's own text, entities decoded, trimmed. */
  text: string;
  /** Index of `<name` in the XML text. */
  offset: number;
}

export type XmlParse = { ok: true; root: XmlElement } | { ok: false; message: string; line: number; column: number };

const MAX_DEPTH = 64;
const TEXT = '#text';
const ATTRS = ':@';

/** Parses a well-formed XML document with one root element. */
export function parseXmlTree(xml: string): XmlParse {
  const valid = XMLValidator.validate(xml, { allowBooleanAttributes: false });
  if (valid !== true) {
    return { ok: false, message: explain(valid.err.msg), line: valid.err.line, column: valid.err.col };
  }
  const parser = new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    htmlEntities: false,
    captureMetaData: true,
    maxNestedTags: MAX_DEPTH,
  });
  let nodes: unknown;
  try {
    nodes = parser.parse(xml);
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error), line: 1, column: 1 };
  }
  const roots = toElements(nodes, XMLParser.getMetaDataSymbol() as unknown as symbol, 0);
  const root = roots[0];
  if (root === undefined) return { ok: false, message: 'the block has no element', line: 1, column: 1 };
  return { ok: true, root };
}

function explain(message: string): string {
  if (/char '&'/.test(message)) return `${message} Write & as &amp; inside the block.`;
  if (/char '<'/.test(message)) return `${message} Write < as &lt; inside the block.`;
  return message;
}

function toElements(value: unknown, meta: symbol, depth: number): XmlElement[] {
  if (!Array.isArray(value) || depth > MAX_DEPTH) return [];
  const out: XmlElement[] = [];
  for (const node of value as Array<Record<string | symbol, unknown>>) {
    for (const key of Object.keys(node)) {
      if (key === ATTRS || key === TEXT) continue;
      const children = node[key];
      const attrs = (node[ATTRS] ?? {}) as Record<string, unknown>;
      const position = node[meta] as { startIndex?: number } | undefined;
      out.push({
        name: key,
        attrs: Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, String(v)])),
        children: toElements(children, meta, depth + 1),
        text: ownText(children),
        offset: position?.startIndex ?? 0,
      });
    }
  }
  return out;
}

function ownText(children: unknown): string {
  if (!Array.isArray(children)) return '';
  let text = '';
  for (const child of children as Array<Record<string, unknown>>) {
    const part = child[TEXT];
    if (part !== undefined) text += String(part);
  }
  return text.trim();
}

export function child(element: XmlElement, name: string): XmlElement | undefined {
  return element.children.find((c) => c.name === name);
}
