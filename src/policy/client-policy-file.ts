import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { loadPolicyFile } from './policy-file.js';
import { secretKind } from './secret-paths.js';

/**
 * The policy file a client key is made with (`kiwi keys create --policy`, the admin API): it
 * must exist inside the project, after symbolic links are followed, be no secret (`.env`,
 * `.git/…`: never read), and parse, so that a typo
 * fails when the key is made and not on the client's first request. Returns its path relative to
 * the project root, as the key records it.
 */
export async function clientPolicyFile(root: string, file: string, client: string): Promise<string> {
  const realRoot = await realpath(root);
  let real: string;
  try {
    real = await realpath(file);
  } catch {
    throw new KiwiError('INVALID_INPUT', `the policy file ${JSON.stringify(file.slice(0, 200))} does not exist; write it first, e.g. .ai/config/clients/${client}.yaml`);
  }
  const relative = path.relative(realRoot, real);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) {
    throw new KiwiError('INVALID_INPUT', `the policy file ${JSON.stringify(file.slice(0, 200))} is outside the project ${root}; keep client policies in the project, e.g. .ai/config/clients/${client}.yaml`);
  }
  const posix = relative.split(path.sep).join('/');
  // Never read as a policy: a parse error would quote what it holds.
  const secret = secretKind(posix);
  if (secret !== undefined) throw new KiwiError('INVALID_INPUT', `${posix} is ${secret}, not a policy file; keep client policies in the project, e.g. .ai/config/clients/${client}.yaml`);
  await loadPolicyFile(real, realRoot);
  return posix;
}
