import { describeError } from '../base/errors.js';
import { helpPage, overviewPage } from '../cli/help-page.js';
import { UsageError, type CliContext } from '../cli/io.js';
import { requestedHelp } from '../cli/parse-flags.js';
import { KIWI_VERSION } from '../base/version.js';
import { COMMAND_GROUPS, type CliCommand } from './cli-commands.js';

const COMMANDS = new Map<string, CliCommand>(COMMAND_GROUPS.flatMap((g) => g.commands.map((c) => [c.help.name, c] as const)));

/** Every command `kiwi` knows. */
export const COMMAND_NAMES: readonly string[] = [...COMMANDS.keys()];

/** `kiwi --help`: one line per command; `kiwi help COMMAND` has the rest. */
export const OVERVIEW = overviewPage(
  'kiwi — intent-resolving gateway between LLM agents and their tools',
  COMMAND_GROUPS.map((g) => ({ title: g.title, commands: g.commands.map((c) => c.help) })),
  [
    ['--project DIR', 'the project, the folder that holds .ai/ (default: KIWI_PROJECT, else the current folder)'],
    ['--json', 'machine-readable output, on most commands'],
    ['-h, --help', "a command's page; runs nothing"],
    ['-V, --version', 'the version'],
    ['KIWI_USER_DIR', 'moves the user tier, ~/.ai (default: your home folder)'],
  ],
);

/** Runs one CLI command and returns its exit code; every failure is one line on stderr. */
export async function runCli(argv: string[], ctx: Omit<CliContext, 'argv'>): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    ctx.io.out(OVERVIEW);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-V') {
    ctx.io.out(`kiwi ${KIWI_VERSION}`);
    return 0;
  }
  if (name === 'help') return help(rest, ctx);
  const command = COMMANDS.get(name);
  if (!command) {
    ctx.io.err(`kiwi: unknown command \`${name}\`; run \`kiwi --help\` to see the commands`);
    return 2;
  }
  // Answered from the help alone: the command's code is not even loaded, and nothing runs.
  const page = requestedHelp(rest, command.help);
  if (page !== undefined) {
    ctx.io.out(page);
    return 0;
  }
  try {
    return await (await command.load())({ ...ctx, argv: rest });
  } catch (error) {
    if (error instanceof UsageError) {
      ctx.io.err(`kiwi ${name}: ${error.message}`);
      return 2;
    }
    ctx.io.err(`kiwi ${name}: ${describeError(error).split('\n')[0]}`);
    return 1;
  }
}

/** `kiwi help [COMMAND [SUB]]`: the overview, a command's page or a subcommand's. */
function help(words: string[], ctx: Omit<CliContext, 'argv'>): number {
  const [name, sub, ...extra] = words;
  if (name === undefined) {
    ctx.io.out(OVERVIEW);
    return 0;
  }
  const command = COMMANDS.get(name);
  if (!command) {
    ctx.io.err(`kiwi help: unknown command \`${name}\`; run \`kiwi --help\` to see the commands`);
    return 2;
  }
  const subs = command.help.subcommands ?? [];
  if (extra.length > 0 || (sub !== undefined && !subs.some((s) => s.name === sub))) {
    const known = subs.length > 0 ? `its commands are ${subs.map((s) => s.name).join(', ')}` : 'it has no subcommands';
    ctx.io.err(`kiwi help: \`kiwi ${name}\` has no command \`${[sub, ...extra].join(' ')}\`; ${known}; usage: kiwi help ${name}${subs.length > 0 ? ' [COMMAND]' : ''}`);
    return 2;
  }
  ctx.io.out(helpPage(command.help, sub));
  return 0;
}
