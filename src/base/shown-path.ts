import path from 'node:path';

/** `file` as people read the project's paths: relative to `root` when it is inside it, else as given. */
export function shownPath(root: string, file: string): string {
  const rel = path.relative(root, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}
