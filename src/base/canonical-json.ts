/**
 * Deterministic JSON: object keys sorted, no whitespace, and (like Python's `json.dumps` with
 * `sort_keys=True, separators=(",", ":")`) every non-ASCII character escaped as \uXXXX, so hashes
 * match the ones Kiwi MCP computed.
 */
export function canonicalJson(value: unknown): string {
  return escapeNonAscii(JSON.stringify(sortKeys(value)));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

function escapeNonAscii(json: string): string {
  return json.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
