import { readFileSync } from 'node:fs';
import path from 'node:path';
import { realPathOf } from '../base/real-path.js';

/**
 * How a person runs this `kiwi` from where they are, for the hints Kiwi prints (`try: … chat`).
 * `npx kiwi` works only inside Kiwi Gateway's own repository: anywhere else npx fetches the
 * unrelated `kiwi` package from npm. So: `kiwi` where the `kiwi` on PATH is this one (`npm link`,
 * a global install), `npx kiwi` in this package's own folder, else `node <this main.js>`.
 */
export function kiwiCommand(where: { script: string; cwd: string; path: string | undefined }): string {
  const script = realPathOf(where.script);
  if (script !== undefined) {
    for (const dir of (where.path ?? '').split(path.delimiter).filter((d) => path.isAbsolute(d))) {
      if (realPathOf(path.join(dir, 'kiwi')) === script) return 'kiwi';
    }
  }
  if (packageName(where.cwd) === 'kiwi-gateway') return 'npx kiwi';
  return `node ${quoted(where.script)}`;
}

function packageName(dir: string): string | undefined {
  try {
    const name = (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}


/** Shell-quoted where it needs to be: a path with spaces or quotes still pastes. */
function quoted(p: string): string {
  return /^[\w@%+=:,./-]+$/u.test(p) ? p : `'${p.replaceAll("'", `'\\''`)}'`;
}
