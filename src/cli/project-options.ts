import { statSync } from 'node:fs';
import path from 'node:path';
import type { ProjectOptions } from '../project/open-project.js';
import { UsageError, type CliContext } from './io.js';

/**
 * `--project` wins over KIWI_PROJECT, which wins over the working folder; KIWI_USER_DIR moves the
 * user tier. The folder must exist: every command reads or writes `.ai/` inside it, and a file
 * there would otherwise surface as a confusing error about the first file read under it. It must
 * hold `.ai/` too, unless the command says it can do without (`needsAi: false`): a command run in
 * the wrong folder would otherwise serve nothing and leave generated state there.
 */
export function projectOptions(ctx: CliContext, flags: { project?: string | undefined }, { needsAi = true }: { needsAi?: boolean } = {}): ProjectOptions {
  const given = flags.project ?? ctx.env['KIWI_PROJECT'];
  const projectDir = path.resolve(ctx.cwd, given ?? '.');
  const from = flags.project !== undefined ? '--project' : given !== undefined ? 'KIWI_PROJECT' : 'the working folder';
  const found = statSync(projectDir, { throwIfNoEntry: false });
  if (found === undefined) throw new UsageError(`${from} ${projectDir} does not exist; give the folder that holds .ai/`);
  if (!found.isDirectory()) throw new UsageError(`${from} ${projectDir} is not a folder; give the folder that holds .ai/, e.g. --project ${path.dirname(projectDir)}`);
  if (needsAi && statSync(path.join(projectDir, '.ai'), { throwIfNoEntry: false })?.isDirectory() !== true) {
    const init = given === undefined ? 'kiwi init' : `kiwi init ${shellWord(projectDir)}`;
    throw new UsageError(`${from} ${projectDir} has no .ai/ folder, so it is not a Kiwi project yet: run \`${init}\` to make one (config, a default-deny policy, the script runtimes), or point --project at the folder that holds .ai/`);
  }
  const userDir = ctx.env['KIWI_USER_DIR'];
  return { projectDir, env: ctx.env, source: 'cli', ...(userDir ? { userDir } : {}) };
}

/** A path as it can be pasted into a shell. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}
