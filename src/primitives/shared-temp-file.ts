import { lstatSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';

/**
 * A read-only file of ours in the temp folder, for the sandbox to bind or hand to bwrap (the empty
 * file over masked secrets, the unix-socket filter): `name` is shared by every run of this user and
 * reused when it is a plain file of ours, not writable by anyone, holding exactly `content`. One
 * that is not (another user made it first, or it was changed) is not used: a fresh private copy is.
 */
export function sharedTempFile(name: string, content: Buffer | string): string {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  const { uid } = userInfo();
  const shared = path.join(tmpdir(), name);
  try {
    writeFileSync(shared, bytes, { flag: 'wx', mode: 0o444 });
  } catch {
    // there already, or the temp folder is not writable: checked below
  }
  try {
    const st = lstatSync(shared);
    if (st.isFile() && st.uid === uid && (st.mode & 0o222) === 0 && st.size === bytes.length && readFileSync(shared).equals(bytes)) return shared;
  } catch {
    // fall through to a private one
  }
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'kiwi-sandbox-')), path.basename(name));
  writeFileSync(file, bytes, { mode: 0o444 });
  return file;
}
