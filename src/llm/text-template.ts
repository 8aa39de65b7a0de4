/**
 * The chunks of one streamed answer differ only in their text: the same id, model and created,
 * the same fields around the delta. Once a chunk has been parsed and checked, the bytes around
 * its text are a template: a later chunk with exactly those bytes before and after its text,
 * and a text that needs no unescaping (no quote, backslash or control character), is that
 * template with another text, and reads as it without JSON.parse, which is most of what
 * passing a stream through costs. Anything else (another shape, an escape, the finish or usage
 * chunk) is parsed as usual.
 */
export interface TextTemplate {
  /** The text of `data` when it fits the template, else undefined. */
  textOf(data: string): string | undefined;
}

/** What a text must not hold to be read as it stands. */
const NEEDS_PARSING = /["\\\u0000-\u001f]/;

/**
 * The template of a parsed chunk whose only news was `text`, or undefined when its text is not
 * where exactly one `"content":` literal says (another encoding, or the same literal twice).
 */
export function learnTextTemplate(data: string, text: string): TextTemplate | undefined {
  const literal = JSON.stringify(text);
  const key = `"content":${literal}`;
  const at = data.indexOf(key);
  if (at === -1 || data.indexOf(key, at + 1) !== -1) return undefined;
  // Both ends keep their quote: the text sits between them.
  const prefix = data.slice(0, at + key.length - literal.length + 1);
  const suffix = data.slice(at + key.length - 1);
  const fixed = prefix.length + suffix.length;
  return {
    textOf(next) {
      if (next.length < fixed || !next.startsWith(prefix) || !next.endsWith(suffix)) return undefined;
      const middle = next.slice(prefix.length, next.length - suffix.length);
      return NEEDS_PARSING.test(middle) ? undefined : middle;
    },
  };
}
