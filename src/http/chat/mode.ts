import { KiwiError } from '../../base/errors.js';
import type { LoopMode } from '../../loop/loop-types.js';

/**
 * Picks the loop mode for one request. A client can ask in two ways: the `x-kiwi-mode` header,
 * or a `+resolve-only` / `+execute` suffix on the model name, for clients that cannot set
 * headers (many IDE plugins only let users type a model name). The header wins when both are
 * given: it is the more deliberate setting, usually made by whoever configured the client. The
 * suffix is always stripped, so the upstream never sees it. Default: execute.
 */

export const MODE_HEADER = 'x-kiwi-mode';

const MODES: readonly LoopMode[] = ['execute', 'resolve-only'];

export function pickMode(header: string | undefined, model: string): { mode: LoopMode; model: string } {
  let suffixMode: LoopMode | undefined;
  let bare = model;
  for (const mode of MODES) {
    if (model.endsWith(`+${mode}`)) {
      suffixMode = mode;
      bare = model.slice(0, -(mode.length + 1));
    }
  }
  if (bare.trim() === '') {
    throw new KiwiError('INVALID_INPUT', `The model "${model.slice(0, 100)}" names only a mode; give a model name before the suffix, e.g. "gpt-4o-mini+resolve-only"`, {
      details: { param: 'model' },
    });
  }
  if (header === undefined) return { mode: suffixMode ?? 'execute', model: bare };
  const value = header.trim().toLowerCase();
  const mode = MODES.find((m) => m === value);
  if (mode === undefined) {
    throw new KiwiError('INVALID_INPUT', `The ${MODE_HEADER} header is "${header.slice(0, 100)}"; it must be "execute" or "resolve-only" (or leave it out for execute)`);
  }
  return { mode, model: bare };
}
