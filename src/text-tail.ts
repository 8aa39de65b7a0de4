/** The last `max` UTF-16 units of `text`, never starting on the second half of a surrogate pair. */
export function textTail(text: string, max: number): string {
  if (text.length <= max) return text;
  const start = text.length - max;
  const c = text.charCodeAt(start);
  return text.slice(c >= 0xdc00 && c <= 0xdfff ? start + 1 : start);
}
