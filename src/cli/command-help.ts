import { DEFAULT_PORT } from '../http/server/listen-limits.js';

/**
 * A command's help, declared once beside the command: its flags here are the parser's own
 * (parseFlags takes nothing else), so a flag cannot be accepted without a line of help, and the
 * page that `kiwi help CMD` prints cannot list a flag the command does not take.
 */

/** One flag: what node:util parseArgs needs, and what the page says about it. */
export interface FlagHelp {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly default?: string;
  readonly multiple?: boolean;
  /** What a string flag's value stands for on the page: `DIR`, `N`, `KEY=VALUE`. */
  readonly value?: string;
  /** What the flag does, one line (the page adds the default and "may be repeated"). */
  readonly help: string;
}

export type FlagsHelp = Readonly<Record<string, FlagHelp>>;

export interface HelpExample {
  /** A command line as it is typed, from `kiwi` on. */
  readonly run: string;
  /** What it does, when the line does not say it. */
  readonly about?: string;
}

/** A subcommand (`kiwi registry push`): its own page, with the flags of its parent's parser that it uses. */
export interface SubcommandHelp<K extends string = string> {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly about?: string;
  readonly flags: readonly K[];
  readonly examples: readonly HelpExample[];
}

export interface CommandHelp<F extends FlagsHelp = FlagsHelp> {
  /** The word after `kiwi`. */
  readonly name: string;
  /** One line for `kiwi --help`'s list (at most 65 characters). */
  readonly summary: string;
  /** The short usage a usage mistake prints: one line, every form, every flag. */
  readonly usage: string;
  readonly about?: string;
  readonly flags: F;
  readonly examples: readonly HelpExample[];
  /** Each names flags of `flags` only: defineHelp checks it. */
  readonly subcommands?: readonly SubcommandHelp[];
}

/** Keeps the flags' literal types, so that parseFlags types each value by its flag; a subcommand may name only those flags. */
export function defineHelp<const F extends FlagsHelp>(help: CommandHelp<F> & { subcommands?: readonly SubcommandHelp<NoInfer<keyof F & string>>[] }): CommandHelp<F> {
  return help;
}

/** `--project DIR`, the same on every command that works on a project. */
export const PROJECT_FLAG = { type: 'string', value: 'DIR', help: 'the project: the folder that holds .ai/ (default: KIWI_PROJECT, else the current folder)' } as const;

/** `--url` and `--key` of the commands that talk to a running gateway. */
export const URL_FLAG = { type: 'string', value: 'URL', help: `the running gateway (default: http://127.0.0.1 on port KIWI_PORT, else ${DEFAULT_PORT})` } as const;
export const KEY_FLAG = { type: 'string', value: 'KEY', help: 'the client key to send (default: KIWI_API_KEY); needed once the gateway has keys' } as const;
