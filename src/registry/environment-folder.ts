import { access, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { replaceFile } from '../base/replace-file.js';
import { ENVIRONMENT_NAME, parseEnvironment, type EnvironmentFile } from './environment-file.js';

/** The project's environments: `.ai/environments/NAME.yaml`, one file each. */
export const ENVIRONMENTS_DIR = path.join('.ai', 'environments');

/** An environment is a few lines; a bigger file is not one. */
const MAX_FILE_BYTES = 64 * 1024;
/** A folder with more is read this far, and says so. */
const MAX_LISTED = 1000;

export function checkEnvironmentName(name: string): void {
  if (!ENVIRONMENT_NAME.test(name)) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(name)} is not an environment name: use letters, digits, "_", "." and "-" (at most 64), e.g. review_src`);
}

/** NOT_FOUND naming the ones there are; INVALID_INPUT when the file does not load, or lies outside the folder through a link. */
export async function readEnvironment(root: string, name: string): Promise<EnvironmentFile> {
  checkEnvironmentName(name);
  const dir = path.join(root, ENVIRONMENTS_DIR);
  const file = path.join(dir, `${name}.yaml`);
  const display = path.join(ENVIRONMENTS_DIR, `${name}.yaml`);
  let text: string;
  try {
    const [realDir, realFile] = await Promise.all([realpath(dir), realpath(file)]);
    if (path.dirname(realFile) !== realDir) throw new KiwiError('INVALID_INPUT', `${display} links to ${realFile}, outside ${ENVIRONMENTS_DIR}; an environment is a file in that folder`);
    text = (await readCappedFile(realFile, MAX_FILE_BYTES, (size) => new KiwiError('PAYLOAD_TOO_LARGE', `${display} is ${size} bytes, more than the ${MAX_FILE_BYTES} an environment may be`))).toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    const there = (await listEnvironments(root)).environments.map((e) => e.name);
    throw new KiwiError('NOT_FOUND', `no environment ${name} (${display}); ${there.length === 0 ? 'there are none yet: `kiwi env save NAME --directive D` makes one' : `the environments are ${there.join(', ')}`}`);
  }
  return parseEnvironment(text, { file, display }, name);
}

/** Every environment that loads, by name, and why each other file does not. */
export async function listEnvironments(root: string): Promise<{ environments: EnvironmentFile[]; errors: string[] }> {
  let names: string[];
  try {
    names = (await readdir(path.join(root, ENVIRONMENTS_DIR))).filter((f) => f.endsWith('.yaml')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { environments: [], errors: [] };
    throw error;
  }
  const environments: EnvironmentFile[] = [];
  const errors: string[] = names.length > MAX_LISTED ? [`${ENVIRONMENTS_DIR} holds ${names.length} files; the first ${MAX_LISTED} are read`] : [];
  for (const file of names.slice(0, MAX_LISTED)) {
    const name = file.slice(0, -'.yaml'.length);
    try {
      environments.push(await readEnvironment(root, name));
    } catch (error) {
      if (!isKiwiError(error)) throw error;
      errors.push(error.message);
    }
  }
  return { environments, errors };
}

/** Writes the environment whole (never half a file); CONFLICT when it exists and `replace` is not given. */
export async function writeEnvironment(root: string, env: Omit<EnvironmentFile, 'label'>, replace: boolean): Promise<string> {
  checkEnvironmentName(env.name);
  const display = path.join(ENVIRONMENTS_DIR, `${env.name}.yaml`);
  const file = path.join(root, ENVIRONMENTS_DIR, `${env.name}.yaml`);
  if (!replace && (await access(file).then(() => true, () => false))) throw new KiwiError('CONFLICT', `${display} exists; pass --force to replace it`);
  const body = {
    name: env.name,
    ...(env.description === '' ? {} : { description: env.description }),
    directive: env.directive,
    ...(Object.keys(env.inputs).length === 0 ? {} : { inputs: env.inputs }),
    ...(env.tools.length === 0 ? {} : { tools: env.tools }),
    ...(env.knowledge.length === 0 ? {} : { knowledge: env.knowledge }),
    ...(env.modelTier === undefined ? {} : { model_tier: env.modelTier }),
    ...(env.model === undefined ? {} : { model: env.model }),
    ...(env.savedAt === undefined ? {} : { saved_at: env.savedAt }),
  };
  const header = '# Saved by `kiwi env save`: the versions and digests pin each item as it was. `kiwi env run` refuses a run once one changes.\n';
  await replaceFile(file, header + stringify(body, { lineWidth: 0 }));
  return display;
}
