import { KiwiError } from '../base/errors.js';

export const DEFAULT_MARKER = 'TOOL';
const MAX_MARKER_CHARS = 32;

/**
 * A marker is a short ASCII word. Restricting it keeps the opening match a plain per-character
 * comparison (no Unicode case folding) and guarantees a held-back opening never contains a
 * second `[`, which is what lets the scanner release a failed opening in one piece.
 */
export function checkMarker(marker: string): string {
  if (typeof marker !== 'string' || marker.length === 0 || marker.length > MAX_MARKER_CHARS || !/^[A-Za-z0-9_-]+$/.test(marker)) {
    throw new KiwiError(
      'INVALID_INPUT',
      `Intent marker ${JSON.stringify(marker)} is not usable: use 1 to ${MAX_MARKER_CHARS} ASCII letters, digits, "_" or "-" (the default is "${DEFAULT_MARKER}").`,
    );
  }
  return marker;
}
