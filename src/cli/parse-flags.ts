import { parseArgs } from 'node:util';
import type { CommandHelp, FlagsHelp } from './command-help.js';
import { helpPage } from './help-page.js';
import { UsageError } from './io.js';

export type FlagValues<F extends FlagsHelp> = { [K in keyof F]?: F[K]['multiple'] extends true ? string[] : F[K]['type'] extends 'string' ? string : boolean };

/**
 * node:util parseArgs over the flags of the command's help, with errors turned into one line and
 * the command's short usage. The help is the only definition of the flags a command takes.
 */
export function parseFlags<F extends FlagsHelp>(args: string[], help: CommandHelp<F>): { values: FlagValues<F>; positionals: string[] } {
  try {
    const parsed = parseArgs({ args, options: parserOptions(help.flags), allowPositionals: true, strict: true });
    return { values: parsed.values as FlagValues<F>, positionals: parsed.positionals };
  } catch (error) {
    const reason = error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error);
    throw new UsageError(`${reason}; usage: ${help.usage}`);
  }
}

/**
 * The page that `--help` or `-h` (before a `--`) asks for: the subcommand's when the first word
 * names one (`kiwi registry push --help`), else the command's; undefined when neither flag is there.
 */
export function requestedHelp(args: string[], help: CommandHelp): string | undefined {
  const end = args.indexOf('--');
  const flags = end === -1 ? args : args.slice(0, end);
  if (!flags.includes('--help') && !flags.includes('-h')) return undefined;
  const rest = flags.filter((a) => a !== '--help' && a !== '-h');
  // Lenient: `kiwi run --nope --help` still gets its page; only the first word matters.
  const first = parseArgs({ args: rest, options: parserOptions(help.flags), allowPositionals: true, strict: false }).positionals[0];
  return helpPage(help, first);
}

/** The flags as parseArgs takes them: their help stays behind. */
export function parserOptions(flags: FlagsHelp): Record<string, { type: 'string' | 'boolean'; short?: string; default?: string; multiple?: boolean }> {
  return Object.fromEntries(
    Object.entries(flags).map(([name, f]) => [name, { type: f.type, ...(f.short ? { short: f.short } : {}), ...(f.default !== undefined ? { default: f.default } : {}), ...(f.multiple ? { multiple: true } : {}) }]),
  );
}
