/**
 * Command checks over argv arrays. Commands are never run through a shell, so `;`, `$(…)` and
 * backticks are inert text; what matters is which program runs and which options it gets.
 *
 * - argv[0] must equal a rule's `executable` exactly: `/usr/bin/git` is not `git`, and
 *   `git; rm -rf ~` is just a program name nobody listed.
 * - `subcommands`: argv[1] must be one of them (so `git -C /elsewhere status` is denied).
 * - `denyArgs`: regexes, used as written (write `^` / `$` yourself), that no argv element may
 *   match. Prefer `allowFlags` where you can: programs such as git accept abbreviated long
 *   options (`--upload-pa=…`), which a deny list easily misses.
 * - `allowFlags`: every element after argv[0] that starts with `-` (including `-` and `--`)
 *   must be listed, exactly or by an `--opt=*` entry that allows any value.
 * Several rules for one executable: the command passes if any of them passes.
 */
import { checkChain, deny, quote, type CommandRule, type Decision, type PermissionContext } from './permission-context.js';

const MAX_ARGS = 1024;
const MAX_ARG_LENGTH = 65_536;

export function checkCommand(ctx: PermissionContext, argv: readonly string[]): Decision {
  if (!Array.isArray(argv) || argv.length === 0) return deny(ctx, 'command is empty; pass argv as an array, program first');
  if (argv.length > MAX_ARGS) return deny(ctx, `command has more than ${MAX_ARGS} arguments`);
  for (const [i, arg] of argv.entries()) {
    if (typeof arg !== 'string') return deny(ctx, `argv[${i}] is not a string`);
    if (arg.length > MAX_ARG_LENGTH) return deny(ctx, `argv[${i}] is longer than ${MAX_ARG_LENGTH} characters`);
    if (arg.includes('\0')) return deny(ctx, `argv[${i}] ${quote(arg)} contains a NUL byte`);
  }
  const program = argv[0] as string;
  if (program === '') return deny(ctx, 'argv[0] is empty; name the program to run');
  return checkChain(ctx, (c) => checkRules(c, c.rules.commands, program, argv));
}

function checkRules(ctx: PermissionContext, rules: readonly CommandRule[], program: string, argv: readonly string[]): Decision {
  const candidates = rules.filter((r) => r.executable === program);
  if (candidates.length === 0) {
    const hint = program.includes('/') ? ' (executables are matched exactly; a path runs only when the rule names that same path)' : '';
    return deny(ctx, `command ${quote(program)} is not in \`commands\`${hint}`);
  }
  let firstWhy = '';
  for (const rule of candidates) {
    const why = ruleViolation(rule, argv);
    if (why === undefined) return { allowed: true };
    firstWhy ||= why;
  }
  return deny(ctx, firstWhy);
}

function ruleViolation(rule: CommandRule, argv: readonly string[]): string | undefined {
  const program = quote(rule.executable);
  if (rule.subcommands) {
    const sub = argv[1];
    if (sub === undefined || !rule.subcommands.includes(sub)) {
      const got = sub === undefined ? 'none was given' : `got ${quote(sub)}`;
      return `${program} may run only the subcommands ${rule.subcommands.map(quote).join(', ')}; ${got}`;
    }
  }
  for (const pattern of rule.denyArgs ?? []) {
    const re = new RegExp(pattern, 'u');
    for (const [i, arg] of argv.entries()) {
      if (re.test(arg)) return `argument ${quote(arg)} (argv[${i}]) of ${program} matches the denied pattern ${quote(pattern)}`;
    }
  }
  if (rule.allowFlags) {
    const allowFlags = rule.allowFlags;
    for (const [i, arg] of argv.entries()) {
      if (i === 0 || !arg.startsWith('-')) continue;
      if (!allowFlags.some((f) => flagMatches(f, arg))) {
        return `option ${quote(arg)} (argv[${i}]) of ${program} is not in its \`allow_flags\``;
      }
    }
  }
  return undefined;
}

function flagMatches(allowed: string, arg: string): boolean {
  if (allowed.endsWith('=*')) return arg.startsWith(allowed.slice(0, -1));
  return allowed === arg;
}
