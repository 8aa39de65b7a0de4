/** The 1-based line and column of the UTF-16 `offset` in `text` (clamped to its start). */
export function textPosition(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, offset));
  return { line: before.split('\n').length, column: before.length - before.lastIndexOf('\n') };
}
