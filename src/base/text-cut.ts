/** The first `max` UTF-16 units of `text`, never ending on the first half of a surrogate pair. */
export function textHead(text: string, max: number): string {
  if (text.length <= max) return text;
  const c = text.charCodeAt(max - 1);
  return text.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
}

/** The last `max` UTF-16 units of `text`, never starting on the second half of a surrogate pair. */
export function textTail(text: string, max: number): string {
  if (text.length <= max) return text;
  const start = text.length - max;
  const c = text.charCodeAt(start);
  return text.slice(c >= 0xdc00 && c <= 0xdfff ? start + 1 : start);
}
