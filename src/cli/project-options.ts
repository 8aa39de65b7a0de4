import path from 'node:path';
import type { ProjectOptions } from '../project.js';
import type { CliContext } from './io.js';

/** `--project` wins over KIWI_PROJECT, which wins over the working folder; KIWI_USER_DIR moves the user tier. */
export function projectOptions(ctx: CliContext, flags: { project?: string | undefined }): ProjectOptions {
  const projectDir = path.resolve(ctx.cwd, flags.project ?? ctx.env['KIWI_PROJECT'] ?? '.');
  const userDir = ctx.env['KIWI_USER_DIR'];
  return { projectDir, env: ctx.env, source: 'cli', ...(userDir ? { userDir } : {}) };
}
