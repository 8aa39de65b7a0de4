import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { signText, verifySignature, type SignableKind } from '../../registry/signature.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { replaceFile } from '../../base/replace-file.js';
import type { CommandHelp } from '../../cli/command-help.js';
import { SIGN_HELP, VERIFY_HELP } from './sign-help.js';

const KINDS = ['directive', 'knowledge', 'tool'] as const;

/** Writes the `kiwi-mcp:validated` line after a person has reviewed the file. */
export async function signCommand(ctx: CliContext): Promise<number> {
  const { files, kindFlag } = parse(ctx, SIGN_HELP);
  for (const file of files) {
    const full = path.resolve(ctx.cwd, file);
    const kind = kindFlag ?? kindOf(full);
    const signed = signText(kind, await readFile(full, 'utf8'), new Date());
    await replaceFile(full, signed);
    ctx.io.out(`signed ${file} (${kind})`);
  }
  return 0;
}

export async function verifyCommand(ctx: CliContext): Promise<number> {
  const { files, kindFlag } = parse(ctx, VERIFY_HELP);
  let bad = 0;
  for (const file of files) {
    const full = path.resolve(ctx.cwd, file);
    const kind = kindFlag ?? kindOf(full);
    const result = verifySignature(kind, await readFile(full, 'utf8'));
    if (result.status === 'valid') ctx.io.out(`valid     ${file}`);
    else if (result.status === 'unsigned') {
      bad++;
      ctx.io.out(`unsigned  ${file}: no kiwi-mcp:validated line; review it and run \`kiwi sign ${file}\``);
    } else {
      bad++;
      ctx.io.out(`INVALID   ${file}: stored hash ${result.expected} but the content hashes to ${result.actual}; it changed after signing`);
    }
  }
  return bad === 0 ? 0 : 1;
}

function parse(ctx: CliContext, help: CommandHelp<typeof SIGN_HELP.flags>): { files: string[]; kindFlag: SignableKind | undefined } {
  const { values, positionals } = parseFlags(ctx.argv, help);
  if (positionals.length === 0) throw new UsageError(`name at least one file; usage: ${help.usage}`);
  const kind = values.kind;
  if (kind !== undefined && !(KINDS as readonly string[]).includes(kind)) throw new UsageError(`--kind must be one of ${KINDS.join(', ')}, got ${kind}`);
  return { files: positionals, kindFlag: kind as SignableKind | undefined };
}

/** Markdown under a `knowledge` folder is knowledge, other Markdown a directive, anything else a tool. */
function kindOf(file: string): SignableKind {
  if (!file.endsWith('.md')) return 'tool';
  return file.split(path.sep).includes('knowledge') ? 'knowledge' : 'directive';
}
