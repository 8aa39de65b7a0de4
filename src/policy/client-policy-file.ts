import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { KiwiError } from '../errors.js';
import { loadPolicyFile } from './policy-file.js';

/**
 * The policy file a client key is made with (`kiwi keys create --policy`, the admin API): it
 * must exist inside the project, after symbolic links are followed, and parse, so that a typo
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
  await loadPolicyFile(real, realRoot);
  return relative.split(path.sep).join('/');
}
