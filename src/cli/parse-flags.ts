import { parseArgs } from 'node:util';
import { HelpRequested, UsageError } from './io.js';

export type FlagSpec = Record<string, { type: 'string' | 'boolean'; short?: string; default?: string | boolean; multiple?: boolean }>;
export type FlagValues<S extends FlagSpec> = { [K in keyof S]?: S[K]['multiple'] extends true ? string[] : S[K]['type'] extends 'string' ? string : boolean };

/**
 * node:util parseArgs with errors turned into one usage line. `--help` or `-h` (before a `--`)
 * asks for the usage, on every command that does not take it as a flag of its own.
 */
export function parseFlags<S extends FlagSpec>(args: string[], options: S, usage: string): { values: FlagValues<S>; positionals: string[] } {
  const end = args.indexOf('--');
  const flags = end === -1 ? args : args.slice(0, end);
  if (!('help' in options) && (flags.includes('--help') || flags.includes('-h'))) throw new HelpRequested(usage);
  try {
    const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: parsed.values as FlagValues<S>, positionals: parsed.positionals };
  } catch (error) {
    const reason = error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error);
    throw new UsageError(`${reason}; usage: ${usage}`);
  }
}
