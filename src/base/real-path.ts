import { realpathSync } from 'node:fs';

/** The real path of `p` (symlinks resolved), or undefined where there is nothing there (yet, or any more). */
export function realPathOf(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}
