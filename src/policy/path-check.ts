/**
 * Path checks. Security-critical; the order matters:
 *
 * 1. Reject NUL bytes, then percent-decode until stable (at most MAX_DECODE_ROUNDS), rejecting
 *    malformed escapes, so `%2e%2e/` and `%252e%252e/` are judged as the `../` they become.
 *    A literal `%` that is not an escape is therefore refused too.
 * 2. Reject control characters, backslashes (`..\\x` would be a traversal on Windows) and drive
 *    letters in the decoded path.
 * 3. `path.resolve(root, decoded)` must lie inside the root (compared with `root + sep`, so
 *    `/proj-evil` is not inside `/proj`). Absolute paths pass only when inside the root. Nothing
 *    outside the root is touched on disk, not even with `realpath`.
 * 4. `realpath`; a path that does not exist yet takes the real path of its nearest existing
 *    ancestor plus the rest. A symlink that leads outside the root, a dangling symlink (writing
 *    through it would create its target) and symlink loops are denied.
 * 5. A path that only passed because it was decoded is then denied anyway: the caller may hand
 *    the raw string to something that does not decode, and the two would name different files.
 * 6. The real path, relative to the root with posix separators, must match a glob (read: read or
 *    write globs; write: write globs) in this context and every ancestor. The root itself is
 *    named `.`, matched by the globs `.` and `**`.
 * 7. A protected secret location (secret-paths.ts: `.env*`, `.git/`, keys, the gateway's own
 *    logs, index and state) is denied unless every context names it in `allow_secret_paths`.
 *
 * Callers must use the returned `resolved` path, not the raw one. A symlink swapped between this
 * check and the use (TOCTOU) is not caught here; opening with O_NOFOLLOW closes that gap.
 */
import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { throwIfAborted } from '../base/abort.js';
import { contextChain, deny, matchesAny, quote, type PermissionContext } from './permission-context.js';
import { secretKind } from './secret-paths.js';

export type PathDecision = { allowed: true; resolved: string } | { allowed: false; reason: string };

const MAX_PATH_LENGTH = 4096;
const MAX_DECODE_ROUNDS = 3;

export async function checkPath(ctx: PermissionContext, rawPath: string, access: 'read' | 'write', signal?: AbortSignal): Promise<PathDecision> {
  throwIfAborted(signal, 'path check');
  if (access !== 'read' && access !== 'write') return deny(ctx, `path access must be \`read\` or \`write\`, not ${quote(String(access))}`);
  if (typeof rawPath !== 'string' || rawPath.length === 0) return deny(ctx, 'path is empty; name a file relative to the project root (`.` is the root)');
  if (rawPath.length > MAX_PATH_LENGTH) return deny(ctx, `path is longer than ${MAX_PATH_LENGTH} characters`);
  const shown = quote(rawPath);
  if (rawPath.includes('\0')) return deny(ctx, `path ${shown} contains a NUL byte`);

  const decoded = percentDecode(rawPath);
  if (!decoded.ok) return deny(ctx, `path ${shown} ${decoded.why}`);
  const path = decoded.value;
  const decodedNote = path === rawPath ? '' : ` (decodes to ${quote(path)})`;
  if (/[\u0000-\u001f\u007f]/u.test(path)) return deny(ctx, `path ${shown}${decodedNote} contains control characters`);
  if (path.includes('\\')) return deny(ctx, `path ${shown}${decodedNote} contains a backslash; use \`/\` between folders`);
  if (/^[A-Za-z]:/u.test(path)) return deny(ctx, `path ${shown}${decodedNote} starts with a drive letter; name it relative to the project root`);

  let realRoot: string;
  try {
    realRoot = await realpath(ctx.root);
  } catch (error) {
    return deny(ctx, `the project root ${quote(ctx.root)} cannot be resolved (${errorCode(error)})`);
  }
  const lexical = rebase(resolve(realRoot, path), [realRoot, ctx.root], realRoot);
  if (lexical === undefined) return deny(ctx, `path ${shown}${decodedNote} resolves outside the project root`);

  throwIfAborted(signal, 'path check');
  const real = await realpathAllowingMissing(lexical, realRoot);
  if (!real.ok) return deny(ctx, `path ${shown}${decodedNote}: ${real.why}`);
  if (!isInside(real.path, realRoot)) return deny(ctx, `path ${shown}${decodedNote} leads outside the project root through a symbolic link`);

  if (path !== rawPath) {
    return deny(ctx, `path ${shown} is percent-encoded (decodes to ${quote(path)}); the decoded and the raw text name different files, so write the path plainly`);
  }

  const rel = relative(realRoot, real.path).split(sep).join('/');
  const relNote = (rel || '.') === rawPath ? '' : ` (${quote(rel || '.')})`;
  const secret = secretKind(rel);
  for (const c of contextChain(ctx)) {
    if (secret !== undefined && !matchesPath(c.rules.fsSecrets, rel)) {
      return deny(c, `path ${shown}${relNote} is ${secret}, which tools may not touch unless \`filesystem.allow_secret_paths\` names it`);
    }
    const globs = access === 'write' ? c.rules.fsWrite : [...c.rules.fsRead, ...c.rules.fsWrite];
    if (!matchesPath(globs, rel)) {
      const field = access === 'write' ? '`filesystem.write`' : '`filesystem.read` or `filesystem.write`';
      return deny(c, `path ${shown}${relNote} is not in ${field}`);
    }
  }
  return { allowed: true, resolved: real.path };
}

type Decoded = { ok: true; value: string } | { ok: false; why: string };

function percentDecode(raw: string): Decoded {
  let value = raw;
  for (let round = 0; round <= MAX_DECODE_ROUNDS; round++) {
    if (!value.includes('%')) return { ok: true, value };
    let next: string;
    try {
      next = decodeURIComponent(value);
    } catch {
      return { ok: false, why: 'has a `%` that is not a valid percent-escape; paths with a literal `%` are not accepted' };
    }
    if (next === value) return { ok: true, value };
    if (round === MAX_DECODE_ROUNDS) break;
    value = next;
  }
  return { ok: false, why: `is percent-encoded more than ${MAX_DECODE_ROUNDS} times over` };
}

function matchesPath(globs: readonly string[], rel: string): boolean {
  if (rel === '') return globs.some((g) => g === '**' || g === '.');
  return matchesAny(globs, rel);
}

export function isInside(child: string, root: string): boolean {
  if (child === root) return true;
  const prefix = root.endsWith(sep) ? root : root + sep;
  return child.startsWith(prefix);
}

/** Maps a path under any of `roots` onto `target`; undefined when it is under none. */
function rebase(path: string, roots: readonly string[], target: string): string | undefined {
  for (const root of roots) {
    if (isInside(path, root)) return path === root ? target : join(target, path.slice(root.length));
  }
  return undefined;
}

type Real = { ok: true; path: string } | { ok: false; why: string };

async function realpathAllowingMissing(lexical: string, realRoot: string): Promise<Real> {
  const missing: string[] = [];
  let current = lexical;
  // A folder made between realpath's ENOENT and the lstat below (the audit log makes `.ai/logs`
  // on its first write) is not a dangling link: resolve it again, a few times at most.
  let appeared = 0;
  for (;;) {
    try {
      const real = await realpath(current);
      return { ok: true, path: missing.length === 0 ? real : join(real, ...missing.reverse()) };
    } catch (error) {
      const code = errorCode(error);
      const at = quote(relative(realRoot, current).split(sep).join('/') || '.');
      if (code === 'ELOOP') return { ok: false, why: `${at} is a symbolic link loop` };
      if (code === 'ENOTDIR') return { ok: false, why: `a part of it before ${at} is a file, not a folder` };
      if (code !== 'ENOENT') return { ok: false, why: `${at} cannot be resolved (${code})` };
      const exists = await lstat(current).then(
        (stats) => (stats.isSymbolicLink() ? 'link' : 'made meanwhile'),
        (e: unknown) => (errorCode(e) === 'ENOENT' ? false : errorCode(e)),
      );
      if (exists === 'made meanwhile') {
        if (++appeared <= 3) continue;
        return { ok: false, why: `${at} kept changing while it was checked` };
      }
      if (exists === 'link') return { ok: false, why: `${at} is a symbolic link whose target does not exist` };
      if (exists !== false) return { ok: false, why: `${at} cannot be resolved (${exists})` };
      const parent = dirname(current);
      if (parent === current) return { ok: false, why: 'no part of it exists' };
      missing.push(basename(current));
      current = parent;
    }
  }
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'unknown error';
}
